package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	"github.com/syncpod/syncpod/proto/validation"
	"github.com/syncpod/syncpod/services/ctl/cliargs"
	"github.com/syncpod/syncpod/services/server/access"
)

// Env is everything syncpodctl touches outside itself.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Now    func() time.Time
	// Dial connects to a server address; nil means syncpodctl's own (unix
	// sockets, mutual TLS, or plaintext TCP under --insecure-tcp).
	Dial func(addr string) (grpc.ClientConnInterface, io.Closer, error)
	// ConvertKubernetes turns Kubernetes Pod manifests into syncpod Pods;
	// nil refuses them.
	ConvertKubernetes KubernetesConverter
}

// Exit codes.
const (
	exitOK       = 0
	exitFailure  = 1 // the server refused or failed
	exitUsage    = 2 // bad command line
	exitNotFound = 3 // what was named does not exist
)

const rootLong = `syncpodctl drives a syncpod node, like kubectl drives a cluster.

Global flags may stand anywhere on the line. Every global flag also reads
SYNCPOD_ + its upper-cased name (SYNCPOD_SERVER, SYNCPOD_EXECUTOR,
SYNCPOD_PLEG, SYNCPOD_NAMESPACE, SYNCPOD_REQUEST_TIMEOUT, SYNCPOD_CONFIG,
...); the command line wins, then the environment, then the context of
the config file (--config, default ~/.config/syncpod/config.yaml).

The services listen on unix sockets in the runtime directory by default
($XDG_RUNTIME_DIR/syncpod, else /run/syncpod for root), which syncpodctl
dials. A TCP address needs mutual TLS: --certificate-authority,
--client-certificate and --client-key, or a context holding them (see
syncpodctl certs); --insecure-tcp dials plaintext.

--request-timeout bounds each request to a server; the --timeout of
wait and delete bounds the whole wait, as with kubectl.

Exit codes: 0 ok, 1 the server refused or failed, 2 bad command line,
3 not found.`

const rootExample = `  syncpodctl apply -f examples/
  syncpodctl get pods -A -o wide
  syncpodctl get pod web -o yaml > web.yaml && syncpodctl apply -f web.yaml
  syncpodctl wait --for=condition=Ready pod/web --timeout=60s
  syncpodctl describe pod web
  syncpodctl plan -f examples/web.yaml
  syncpodctl backoffs reset crashloop -c crash
  syncpodctl node shutdown
  syncpodctl delete pod web`

// usageError is a bad command line (exit code 2).
type usageError = cliargs.UsageError

func usagef(format string, args ...any) error { return cliargs.Usagef(format, args...) }

// Run is syncpodctl: it returns the process exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	g := &globals{env: env}
	if g.env.Dial == nil {
		g.env.Dial = g.dial
	}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !g.ran {
		// Everything that fails before a command runs is the command
		// line's fault: unknown commands and flags, wrong arguments, bad
		// environment values.
		var ue usageError
		if !errors.As(err, &ue) {
			err = usageError{Msg: err.Error()}
		}
		if cmd == nil || cmd == root {
			fmt.Fprintf(env.Stderr, "error: %s\nRun 'syncpodctl --help' for usage.\n", err)
			return exitUsage
		}
		fmt.Fprintf(env.Stderr, "error: %s\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return exitUsage
	}
	return report(env.Stderr, err)
}

// newRoot builds the command tree.
func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "syncpodctl",
		Short:         "syncpodctl drives a syncpod node, like kubectl drives a cluster",
		Long:          rootLong,
		Example:       rootExample,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Without a command: help on stdout, and exit 2 like any other
		// incomplete command line.
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(g.env.Stdout)
			_ = cmd.Help()
			return usagef("no command given")
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags(), g.env.Getenv); err != nil {
				return err
			}
			return g.applyConfig(cmd.Flags())
		},
		Version: access.Version,
	}
	root.SetVersionTemplate("syncpodctl {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{Msg: err.Error()} })
	pf := root.PersistentFlags()
	getenv := g.env.Getenv
	pf.StringVar(&g.server, "server", "unix://"+access.DefaultSocket(getenv, "planner"), "planner address: unix:///path, or host:port with mutual TLS (--certificate-authority, --client-certificate, --client-key) or --insecure-tcp")
	pf.StringVar(&g.executor, "executor", "unix://"+access.DefaultSocket(getenv, "executor"), "executor address, for backoffs")
	pf.StringVar(&g.pleg, "pleg", "unix://"+access.DefaultSocket(getenv, "pleg"), "PLEG address, for plans against a live pod")
	pf.StringVar(&g.config, "config", "", "config file of contexts (server addresses, CA, client certificate and key); default ~/.config/syncpod/config.yaml when it exists")
	pf.StringVar(&g.context, "context", "", "context of the config file to use (default its current-context)")
	pf.StringVar(&g.ca, "certificate-authority", "", "CA (PEM) the servers' certificates must chain to, for TCP addresses")
	pf.StringVar(&g.clientCert, "client-certificate", "", "client certificate (PEM) presented to TCP addresses; its CN and O are the identity the servers authorize")
	pf.StringVar(&g.clientKey, "client-key", "", "private key (PEM) of --client-certificate")
	pf.BoolVar(&g.insecureTCP, "insecure-tcp", false, "dial TCP addresses in plaintext, without TLS (only servers started with --insecure-tcp answer)")
	pf.DurationVar(&g.requestTimeout, "request-timeout", 10*time.Second, "how long each request to a server may take (kubectl's --request-timeout; wait and delete --timeout bound the whole wait)")
	pf.StringVarP(&g.namespace, "namespace", "n", validation.DefaultNamespace, "namespace of the pods named")
	root.AddGroup(&cobra.Group{ID: "basic", Title: "Pods:"}, &cobra.Group{ID: "debug", Title: "Troubleshooting:"}, &cobra.Group{ID: "node", Title: "Node:"})
	for _, c := range []*cobra.Command{newApply(g), newGet(g), newDescribe(g), newDelete(g), newWait(g)} {
		c.GroupID = "basic"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{newLogs(g), newExec(g), newAttach(g), newDebug(g), newPortForward(g), newTop(g), newEvents(g), newPlan(g)} {
		c.GroupID = "debug"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{newBackoffs(g), newNode(g), newVersion(g), newCerts(g)} {
		c.GroupID = "node"
		root.AddCommand(c)
	}
	root.SetHelpCommandGroupID("node")
	root.SetCompletionCommandGroupID("node")
	// Mark the point where parsing is over and a command runs: errors
	// from here on are the command's, not the command line's.
	var mark func(c *cobra.Command)
	mark = func(c *cobra.Command) {
		if run := c.RunE; run != nil && c != root {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				g.ran = true
				return run(cmd, args)
			}
		}
		for _, sub := range c.Commands() {
			mark(sub)
		}
	}
	mark(root)
	return root
}

// applyEnv sets every flag left unset on the command line from its
// SYNCPOD_ environment variable.
func applyEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var errs []error
	for _, name := range append([]string{"server", "executor", "pleg", "request-timeout", "namespace", "config", "context"}, accessFlags...) {
		f := fs.Lookup(name)
		if f == nil || f.Changed {
			continue
		}
		v := getenv(access.EnvName(name))
		if v == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", access.EnvName(name), v, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return usageError{Msg: err.Error()}
	}
	return nil
}

func report(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "error: %s\nRun 'syncpodctl --help' for usage.\n", ue.Msg)
		return exitUsage
	}
	var nf notFoundError
	if errors.As(err, &nf) {
		fmt.Fprintf(w, "Error: %s\n", nf.msg)
		return exitNotFound
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var s silent
	if errors.As(err, &s) {
		if status.Code(s.err) == codes.NotFound {
			return exitNotFound
		}
		return exitFailure
	}
	st, ok := status.FromError(err)
	if !ok {
		fmt.Fprintf(w, "error: %v\n", err)
		return exitFailure
	}
	switch st.Code() {
	case codes.NotFound:
		fmt.Fprintf(w, "Error from server (NotFound): %s\n", st.Message())
		return exitNotFound
	case codes.Unavailable:
		fmt.Fprintf(w, "error: cannot reach the server: %s\n", st.Message())
	case codes.InvalidArgument:
		printBadRequest(w, st)
	default:
		fmt.Fprintf(w, "Error from server (%s): %s\n", st.Code(), st.Message())
	}
	return exitFailure
}

// exitError ends syncpodctl with a given code, its message already shown.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

type globals struct {
	env       Env
	server    string
	executor  string
	pleg      string
	namespace string
	// requestTimeout (--request-timeout) bounds one request to a server;
	// the --timeout of wait and delete bounds their whole wait.
	requestTimeout time.Duration
	ran            bool // a command's RunE has started
	// Access (access.go).
	config, context string
	ca, clientCert  string
	clientKey       string
	insecureTCP     bool
}

func (g *globals) planner() (plannerv1.PlannerServiceClient, io.Closer, error) {
	conn, closer, err := g.env.Dial(g.server)
	if err != nil {
		return nil, nil, err
	}
	return plannerv1.NewPlannerServiceClient(conn), closer, nil
}

// plannerEarly is planner with the connection begun at once, in the
// background, rather than at the first call: its handshake overlaps
// whatever the caller does before that call. A dial error is returned
// as planner's.
func (g *globals) plannerEarly() (plannerv1.PlannerServiceClient, io.Closer, error) {
	conn, closer, err := g.env.Dial(g.server)
	if err != nil {
		return nil, nil, err
	}
	if c, ok := conn.(interface{ Connect() }); ok {
		c.Connect()
	}
	return plannerv1.NewPlannerServiceClient(conn), closer, nil
}

func (g *globals) executorClient() (executorv1.ExecutorServiceClient, io.Closer, error) {
	conn, closer, err := g.env.Dial(g.executor)
	if err != nil {
		return nil, nil, err
	}
	return executorv1.NewExecutorServiceClient(conn), closer, nil
}

func (g *globals) plegClient() (plegv1.PlegServiceClient, io.Closer, error) {
	conn, closer, err := g.env.Dial(g.pleg)
	if err != nil {
		return nil, nil, err
	}
	return plegv1.NewPlegServiceClient(conn), closer, nil
}

// onPodArg is the RunE of a command whose first argument names a pod:
// run gets that pod's name (podArg) and all the arguments.
func onPodArg(run func(cmd *cobra.Command, pod string, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		pod, err := podArg(args[0])
		if err != nil {
			return err
		}
		return run(cmd, pod, args)
	}
}

// podArg splits "NAME", "pod/NAME" or "pods/NAME".
func podArg(arg string) (string, error) {
	if kind, name, ok := strings.Cut(arg, "/"); ok {
		if !isPods(kind) {
			return "", usagef("%q: only pods are supported", arg)
		}
		arg = name
	}
	if arg == "" {
		return "", usagef("a pod name is required")
	}
	return arg, nil
}

// podNames reads "pod NAME..." or "pod/NAME ..." arguments.
func podNames(args []string) ([]string, error) {
	if len(args) > 0 && isPods(args[0]) {
		args = args[1:]
		if len(args) == 0 {
			return nil, usagef("a pod name is required")
		}
		for _, a := range args {
			if strings.Contains(a, "/") {
				return nil, usagef("%q: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form", a)
			}
		}
		return args, nil
	}
	if len(args) == 0 {
		return nil, usagef("a pod name is required")
	}
	out := make([]string, len(args))
	for i, a := range args {
		if !strings.Contains(a, "/") {
			return nil, usagef("%q: name a pod as \"pod NAME\" or \"pod/NAME\"", a)
		}
		n, err := podArg(a)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// printBadRequest prints an InvalidArgument status: its message, or, when
// it lists field errors (fielderr.FromStatus), the message's head and one
// field error a line, so a long list stays readable.
func printBadRequest(w io.Writer, st *status.Status) {
	fields := fielderr.FromStatus(st)
	head, _, listed := strings.Cut(st.Message(), " invalid field(s): ")
	if len(fields) == 0 || !listed {
		fmt.Fprintf(w, "Error from server (BadRequest): %s\n", st.Message())
		return
	}
	fmt.Fprintf(w, "Error from server (BadRequest): %s invalid field(s):\n", head)
	for _, fe := range fields {
		fmt.Fprintf(w, "  %s\n", fe.Error())
	}
	if i := strings.LastIndex(st.Message(), "; and "); i >= 0 && strings.HasSuffix(st.Message(), " more") {
		fmt.Fprintf(w, "  %s\n", st.Message()[i+2:]) // the problems Status did not list
	}
}
