package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/syncpod/syncpod/services/server/access"
)

// EnvPrefix is prepended to a flag's upper-cased name (dashes become
// underscores) to form its environment variable: --metrics-listen is
// SYNCPOD_METRICS_LISTEN.
const EnvPrefix = access.EnvPrefix

// Defaults are a binary's default addresses.
type Defaults struct {
	// Listen is the default gRPC address: a unix socket in the runtime
	// directory (DefaultSocket).
	Listen string
	// MetricsListen is the default metrics HTTP address.
	MetricsListen string
	// NoTLSFlags leaves out --tls-cert-file, --tls-private-key-file,
	// --client-ca-file and --metrics-tls, for a binary that gives those
	// names another use (syncpod-node: the kubelet read API); its gRPC
	// listener is then a unix socket or --insecure-tcp.
	NoTLSFlags bool
}

// Flags are the flags every binary has.
type Flags struct {
	// Listen is the gRPC address: host:port or unix:///path.
	Listen string
	// MetricsListen is the HTTP address serving /metrics; empty disables it.
	MetricsListen string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json.
	LogFormat string
	// ShutdownTimeout bounds the graceful drain of in-flight RPCs.
	ShutdownTimeout time.Duration
	// ShowVersion prints the version and exits.
	ShowVersion bool
	// Profiling serves Go's pprof handlers under /debug/pprof/ beside
	// /metrics.
	Profiling bool
	// SocketGroup is the group (name or id) of a unix listener's socket;
	// empty keeps the process's.
	SocketGroup string
	// InsecureTCP allows a plaintext, unauthenticated TCP listener, and
	// plaintext dials of TCP peers.
	InsecureTCP bool
	// TLS is the serving certificate (also the client certificate of
	// calls to peers) and the CA of accepted client certificates.
	TLS TLSFiles
	// Authz are the --authz-read, --authz-write and --authz-exec lists.
	Authz map[Verb]*string
	// MetricsTLS serves /metrics over TLS with the --tls-cert-file
	// certificate.
	MetricsTLS bool
}

// RegisterFlags adds the common flags to fs and returns where they land.
func RegisterFlags(fs *flag.FlagSet, d Defaults) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Listen, "listen", d.Listen, "gRPC listen address, host:port or unix:///path")
	fs.StringVar(&f.MetricsListen, "metrics-listen", d.MetricsListen, "HTTP address for Prometheus /metrics (empty disables)")
	fs.StringVar(&f.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.LogFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&f.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight RPCs may drain on SIGTERM before they are cut")
	fs.BoolVar(&f.ShowVersion, "version", false, "print the version and exit")
	fs.BoolVar(&f.Profiling, "profiling", false, "serve Go's pprof profiles under /debug/pprof/ on the metrics address (unauthenticated, like /metrics: keep that address private)")
	fs.StringVar(&f.SocketGroup, "socket-group", "", "group (name or id) of the unix socket of --listen, mode 0660: its members may call every method; empty keeps the process's group")
	fs.BoolVar(&f.InsecureTCP, "insecure-tcp", false, "DANGEROUS: allow a TCP --listen address with no TLS and no authentication (anyone who reaches the port may start containers as root, exec into them and forward their ports), and plaintext calls to TCP peers")
	f.Authz = map[Verb]*string{}
	if d.NoTLSFlags {
		return f
	}
	fs.StringVar(&f.TLS.CertFile, "tls-cert-file", "", "serving certificate (PEM) of a TCP --listen address; with --tls-private-key-file and --client-ca-file it makes the listener mutual TLS, and is the client certificate of calls to TCP peers")
	fs.StringVar(&f.TLS.KeyFile, "tls-private-key-file", "", "private key (PEM) of --tls-cert-file")
	fs.StringVar(&f.TLS.CAFile, "client-ca-file", "", "CA (PEM) that client certificates must chain to; TCP peers' serving certificates are checked against it too")
	help := map[Verb]string{
		VerbRead:  "get, list, watch, logs, stats, plans, version and reflection",
		VerbWrite: "apply and delete pods, ConfigMaps and Secrets, and the executor's changes to pods",
		VerbExec:  "exec, attach and port-forward",
	}
	for _, v := range Verbs {
		f.Authz[v] = fs.String("authz-"+string(v), strings.Join(DefaultPolicy[v], ","),
			fmt.Sprintf("comma-separated client certificate CommonNames or Organizations allowed to %s over mutual TLS (%s)", v, help[v]))
	}
	fs.BoolVar(&f.MetricsTLS, "metrics-tls", false, "serve /metrics over TLS with --tls-cert-file (no client certificate asked); default plain HTTP, for a loopback address Prometheus scrapes")
	return f
}

// DefaultSocket is where a service listens by default (see
// access.DefaultSocket).
func DefaultSocket(getenv func(string) string, name string) string {
	return access.DefaultSocket(getenv, name)
}

// RuntimeDir is the directory of the default sockets (see
// access.RuntimeDir).
func RuntimeDir(getenv func(string) string) string { return access.RuntimeDir(getenv) }

// Policy is the authorization policy of the --authz-* flags.
func (f *Flags) Policy() (Policy, error) {
	p := Policy{}
	var errs []error
	for _, v := range Verbs {
		if f.Authz[v] == nil {
			p[v] = DefaultPolicy[v]
			continue
		}
		names, err := ParsePolicyList(*f.Authz[v])
		if err != nil {
			errs = append(errs, fmt.Errorf("--authz-%s: %w", v, err))
		}
		p[v] = names
	}
	return p, errors.Join(errs...)
}

// Dialer is how this binary dials its TCP peers: with its own
// certificate, or in plaintext under --insecure-tcp; logger (nil: none)
// hears of certificate files read again after a change.
func (f *Flags) Dialer(logger *slog.Logger) DialPolicy {
	return DialPolicy{TLS: f.TLS, InsecureTCP: f.InsecureTCP, Logger: logger}
}

// EnvName is the environment variable that stands in for a flag.
func EnvName(flagName string) string { return access.EnvName(flagName) }

// Parse parses args into fs, then fills every flag not given on the command
// line from its SYNCPOD_* environment variable (looked up with getenv).
// Command-line values win over the environment. Errors name the flag or
// variable at fault.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with --; see --help)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		v := getenv(EnvName(f.Name))
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
		}
	})
	return errors.Join(errs...)
}

// Validate checks the common flags' values.
func (f *Flags) Validate() error {
	var errs []error
	if _, err := ParseLevel(f.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	if f.LogFormat != "text" && f.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format: %q is not text or json", f.LogFormat))
	}
	if network, _, err := SplitAddress(f.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen: %w", err))
	} else if network == "tcp" && !f.TLS.Set() && !f.InsecureTCP {
		errs = append(errs, fmt.Errorf("--listen: %s is TCP: serve it with mutual TLS (--tls-cert-file, --tls-private-key-file, --client-ca-file), or accept an unauthenticated port with --insecure-tcp", f.Listen))
	}
	if err := f.TLS.Check("--tls-cert-file", "--tls-private-key-file", "--client-ca-file"); err != nil {
		errs = append(errs, err)
	}
	if f.MetricsTLS && f.TLS.CertFile == "" {
		errs = append(errs, errors.New("--metrics-tls: needs --tls-cert-file and --tls-private-key-file"))
	}
	if _, err := f.Policy(); err != nil {
		errs = append(errs, err)
	}
	if f.MetricsListen != "" {
		if _, _, err := SplitAddress(f.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-listen: %w", err))
		}
	} else if f.Profiling {
		errs = append(errs, errors.New("--profiling: the profiles are served on the metrics address, and --metrics-listen is empty"))
	}
	if f.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout: must be positive, got %s", f.ShutdownTimeout))
	}
	return errors.Join(errs...)
}

// ParseLevel turns a level name into a slog level.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q is not one of debug, info, warn, error", s)
	}
	return l, nil
}

// Logger builds the binary's logger writing to w.
func (f *Flags) Logger(w io.Writer, binary string) *slog.Logger {
	lvl, _ := ParseLevel(f.LogLevel)
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if f.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h).With("service", binary)
}

// Start is the common prelude of a binary's main. It handles the
// `healthcheck` subcommand and --version, parses flags and the environment,
// and validates the common flags, then the binary's own with checks (not
// run for --version or a healthcheck). When it returns done, the binary
// should exit with code: 0 for --version or a SERVING healthcheck, 1 for a
// failed healthcheck, 2 for bad flags (with the reason already printed to
// stderr).
func Start(fs *flag.FlagSet, common *Flags, args []string, getenv func(string) string, stdout, stderr io.Writer, checks ...func() error) (done bool, code int) {
	fs.SetOutput(stderr)
	health := len(args) > 0 && args[0] == "healthcheck"
	if health {
		args = args[1:]
	}
	if err := Parse(fs, args, getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return true, 2
	}
	if common.ShowVersion {
		fmt.Fprintf(stdout, "%s %s\n", fs.Name(), access.Version)
		return true, 0
	}
	if err := common.Validate(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return true, 2
	}
	if health {
		if err := Healthcheck(common.Listen, common.Dialer(nil), 5*time.Second); err != nil {
			fmt.Fprintf(stderr, "%s healthcheck: %v\n", fs.Name(), err)
			return true, 1
		}
		fmt.Fprintln(stdout, "SERVING")
		return true, 0
	}
	for _, check := range checks {
		if err := check(); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
			return true, 2
		}
	}
	return false, 0
}
