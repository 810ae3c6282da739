package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/services/server"
)

// Env is everything syncpodctl touches outside itself.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Now    func() time.Time
	// Dial connects to a server address; nil means a plaintext gRPC client.
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

const usage = `syncpodctl drives a syncpod node, like kubectl drives a cluster.

Usage:
  syncpodctl [global flags] COMMAND [flags] [args]

Commands:
  apply -f FILE|DIR|-          create or update pods from Kubernetes Pod YAML/JSON
                               or syncpod JSON (several files, or --- separated)
  get pods [NAME...]           list pods: NAME READY STATUS RESTARTS AGE
                               (-n NS, -A, -l app=web, -o wide|json|yaml)
  describe pod NAME            spec, status, conditions and events of a pod
  delete pod NAME...           stop a pod's containers and forget it (--grace-period N)
  plan -f FILE                 dry run: what the node would do for this pod and why
                               (--observed FILE for a given runtime state)
  events [POD]                 events of a pod or of every pod (--watch to follow)
  backoffs list                crash-loop back-offs (--pod UID)
  backoffs reset POD_UID [CONTAINER]
                               clear a crash loop so the container restarts now
  logs POD CONTAINER           print a container's log (--previous, --log-dir)

Global flags (also SYNCPOD_SERVER, SYNCPOD_EXECUTOR):
  --server ADDR     planner address (default 127.0.0.1:7001; unix:///path works)
  --executor ADDR   executor address, for backoffs (default 127.0.0.1:7002)
  --timeout DUR     per-request timeout (default 10s)

Examples:
  syncpodctl apply -f examples/
  syncpodctl get pods -A -o wide
  syncpodctl describe pod web
  syncpodctl plan -f examples/web.yaml
  syncpodctl backoffs reset 6f1c... web

Exit codes: 0 ok, 1 the server refused or failed, 2 bad command line,
3 not found.
`

// usageError is a bad command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Run is syncpodctl: it returns the process exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.Dial == nil {
		env.Dial = dialPlaintext
	}
	fs := flag.NewFlagSet("syncpodctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := &globals{env: env}
	fs.StringVar(&g.server, "server", "127.0.0.1:7001", "")
	fs.StringVar(&g.executor, "executor", "127.0.0.1:7002", "")
	fs.DurationVar(&g.timeout, "timeout", 10*time.Second, "")
	if err := server.Parse(fs, globalArgs(args), env.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(env.Stdout, usage)
			return exitOK
		}
		fmt.Fprintf(env.Stderr, "syncpodctl: %v\n\n%s", err, usage)
		return exitUsage
	}
	rest := args[len(globalArgs(args)):]
	if len(rest) == 0 || rest[0] == "help" || rest[0] == "--help" || rest[0] == "-h" {
		fmt.Fprint(env.Stdout, usage)
		if len(rest) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := lookup(rest[0])
	if !ok {
		fmt.Fprintf(env.Stderr, "syncpodctl: unknown command %q\n\n%s", rest[0], usage)
		return exitUsage
	}
	err := cmd(ctx, g, rest[1:])
	return report(env.Stderr, err)
}

// globalArgs is the prefix of args made of global flags.
func globalArgs(args []string) []string {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-h" && args[i] != "--help" {
		name := strings.TrimLeft(strings.SplitN(args[i], "=", 2)[0], "-")
		i++
		if !strings.Contains(args[i-1], "=") && (name == "server" || name == "executor" || name == "timeout") && i < len(args) {
			i++
		}
	}
	return args[:i]
}

func report(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "error: %s\nRun 'syncpodctl --help' for usage.\n", ue.msg)
		return exitUsage
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var nf notFoundError
	if errors.As(err, &nf) {
		fmt.Fprintf(w, "Error: %s\n", nf.msg)
		return exitNotFound
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
	default:
		fmt.Fprintf(w, "Error from server (%s): %s\n", st.Code(), st.Message())
	}
	return exitFailure
}

type globals struct {
	env      Env
	server   string
	executor string
	timeout  time.Duration
}

func (g *globals) planner() (plannerv1.PlannerServiceClient, io.Closer, error) {
	conn, closer, err := g.env.Dial(g.server)
	if err != nil {
		return nil, nil, err
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

func dialPlaintext(addr string) (grpc.ClientConnInterface, io.Closer, error) {
	target, err := server.DialTarget(addr)
	if err != nil {
		return nil, nil, usagef("bad server address: %v", err)
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return conn, conn, nil
}

type command func(ctx context.Context, g *globals, args []string) error

// lookup returns the command called name.
func lookup(name string) (command, bool) {
	switch name {
	case "apply":
		return cmdApply, true
	case "get":
		return cmdGet, true
	case "describe":
		return cmdDescribe, true
	case "delete":
		return cmdDelete, true
	case "plan":
		return cmdPlan, true
	case "events":
		return cmdEvents, true
	case "backoffs":
		return cmdBackoffs, true
	case "logs":
		return cmdLogs, true
	}
	return nil, false
}

// subFlags makes a flag set for a subcommand whose --help prints help.
func subFlags(name, help string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "%s\n\nFlags:\n", help)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterleaved parses flags that may come after positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
