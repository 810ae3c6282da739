// Command syncpod-all runs several syncpod services in one process, each
// with its own flags, state, sockets and log, as their own binaries would:
// a whole node (crisim, executor, PLEG, planner, node agent), or many
// nodes, sharing one Go runtime and one copy of the program. See usage
// below; syncpod-all --help.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/crisimd"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/executord"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/noded"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/plannerd"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/plegd"
	"github.com/syncpod/syncpod/services/server"
	"github.com/syncpod/syncpod/services/server/access"
)

const usage = `Usage: syncpod-all [--log-dir DIR] [--file FILE] [--sockets-only] [SERVICE[:NAME] [FLAG...] [-- SERVICE[:NAME] [FLAG...]]...]

Runs several syncpod services in one process, each as its own binary
would run it: its own flags, state (the planner's and the executor's
databases), sockets, metrics and log. One process can hold a whole node,
or many nodes.

SERVICE is crisim, executor, pleg, planner or node; its FLAGs are those of
syncpod-SERVICE (see syncpod-SERVICE --help), and the next service begins
after a lone --. NAME names it in the log (default SERVICE-N, N counting
from 0 per service); a NAME with slashes makes sub-directories under
--log-dir. The SYNCPOD_* environment variables are not read: give each
service its flags.

The services start in dependency order, each kind once every service of
the kinds before it listens: every crisim, then executors and PLEGs, then
planners, then node agents. On SIGTERM they stop in the reverse order, each
kind once the kinds after it have ended (a node agent with
--shutdown-on-sigterm shuts its pods down first, through its planner); on
SIGINT at once. When one service ends on its own (bad flags, a failure),
the others are stopped and syncpod-all exits with its status.

Options:
  --log-dir DIR  write each service's output to DIR/NAME.log instead of
                 to syncpod-all's stdout and stderr, there each line
                 prefixed with "NAME: "
  --file FILE    read more services from FILE, one a line:
                 SERVICE[:NAME] FLAG... split on white space (no quoting);
                 blank lines and lines starting with # are skipped; they
                 start before those on the command line
  --sockets-only the services call one another through their sockets, as
                 separate processes do; by default a planner calls the
                 executor and the PLEG, a node agent its planner, and an
                 executor and a PLEG the crisim of their --cri-endpoint,
                 in-process when they run in this process (the same
                 interceptors, authorization and audit, without encoding
                 the messages)
  --version      print the version and exit

Example, one node on a simulated crisim:

  syncpod-all crisim --listen unix:///tmp/n/crisim.sock --metrics-listen= --mode simulated \
    -- executor --listen unix:///tmp/n/executor.sock --metrics-listen= --cri-endpoint unix:///tmp/n/crisim.sock --data-dir /tmp/n/executor \
    -- pleg --listen unix:///tmp/n/pleg.sock --metrics-listen= --cri-endpoint unix:///tmp/n/crisim.sock \
    -- planner --listen unix:///tmp/n/planner.sock --metrics-listen= --executor unix:///tmp/n/executor.sock --pleg unix:///tmp/n/pleg.sock --data-dir /tmp/n/planner
`

// services are the services syncpod-all runs, by name, and their start
// stage.
var services = map[string]struct {
	run   func(context.Context, daemon.Env) int
	stage int
}{
	"crisim":   {crisimd.Run, 0},
	"executor": {executord.Run, 1},
	"pleg":     {plegd.Run, 1},
	"planner":  {plannerd.Run, 2},
	"node":     {noded.Run, 3},
}

const stages = 4

func main() {
	if code, ok := crisimd.Shim(os.Args[1:]); ok {
		// A process-mode crisim's container shim (this same binary).
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// spec is one service to run.
type spec struct {
	service, name string
	args          []string
}

// options are syncpod-all's own.
type options struct {
	logDir, file string
	version      bool
	socketsOnly  bool
}

// run is the binary: until SIGINT or SIGTERM.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, term, stop := daemon.Signals()
	defer stop()
	return runAll(ctx, term, args, stdout, stderr)
}

// runAll parses args and runs the services until ctx ends or term closes.
func runAll(ctx context.Context, term <-chan struct{}, args []string, stdout, stderr io.Writer) int {
	opts, specs, err := parseArgs(args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err == nil && opts.version {
		fmt.Fprintf(stdout, "syncpod-all %s\n", access.Version)
		return 0
	}
	if err == nil && opts.file != "" {
		var more []spec
		if more, err = readFile(opts.file); err == nil {
			specs = append(more, specs...)
		}
	}
	if err == nil {
		err = nameSpecs(specs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "syncpod-all: %v\n", err)
		return 2
	}
	group := daemon.Group{Stages: make([][]daemon.Member, stages)}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	lockOut, lockErr := &sync.Mutex{}, &sync.Mutex{}
	var local *server.Local
	if !opts.socketsOnly {
		local = server.NewLocal()
	}
	for _, s := range specs {
		env := daemon.Env{Args: s.args, Getenv: withoutFlagVars, Local: local}
		if opts.logDir != "" {
			path := filepath.Join(opts.logDir, s.name+".log")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				fmt.Fprintf(stderr, "syncpod-all: --log-dir: %v\n", err)
				return 1
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				fmt.Fprintf(stderr, "syncpod-all: --log-dir: %v\n", err)
				return 1
			}
			files = append(files, f)
			env.Stdout, env.Stderr = f, f
		} else {
			env.Stdout = &prefixWriter{w: stdout, mu: lockOut, prefix: s.name + ": "}
			env.Stderr = &prefixWriter{w: stderr, mu: lockErr, prefix: s.name + ": "}
		}
		svc := services[s.service]
		group.Stages[svc.stage] = append(group.Stages[svc.stage], daemon.Member{Name: s.name, Run: svc.run, Env: env})
	}
	first, ended, _ := group.Run(ctx, term)
	if !ended {
		return 0
	}
	if first.Code != 0 {
		fmt.Fprintf(stderr, "syncpod-all: %s ended with status %d; the others were stopped\n", first.Name, first.Code)
		return first.Code
	}
	return 0
}

var errHelp = errors.New("help")

// parseArgs splits the command line into syncpod-all's options and the
// services' argument lists.
func parseArgs(args []string) (options, []spec, error) {
	var o options
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "h", "help":
			return o, nil, errHelp
		case "version":
			o.version = true
			args = args[1:]
			continue
		case "sockets-only":
			o.socketsOnly = true
			if hasVal {
				b, err := strconv.ParseBool(val)
				if err != nil {
					return o, nil, fmt.Errorf("--sockets-only: %q is not a boolean", val)
				}
				o.socketsOnly = b
			}
			args = args[1:]
			continue
		case "log-dir", "file":
			if !hasVal {
				if len(args) < 2 {
					return o, nil, fmt.Errorf("--%s: needs a value", name)
				}
				val, args = args[1], args[1:]
			}
			if val == "" {
				return o, nil, fmt.Errorf("--%s: needs a value", name)
			}
			if name == "log-dir" {
				o.logDir = val
			} else {
				o.file = val
			}
			args = args[1:]
		default:
			return o, nil, fmt.Errorf("unknown option %s before the first service (see --help)", a)
		}
	}
	var specs []spec
	for len(args) > 0 {
		end := len(args)
		for i, a := range args {
			if a == "--" {
				end = i
				break
			}
		}
		s, err := parseSpec(args[:end])
		if err != nil {
			return o, nil, fmt.Errorf("service %d: %w", len(specs)+1, err)
		}
		specs = append(specs, s)
		if end == len(args) {
			break
		}
		args = args[end+1:]
		if len(args) == 0 {
			return o, nil, errors.New("a -- with no service after it")
		}
	}
	if len(specs) == 0 && o.file == "" && !o.version {
		return o, nil, errors.New("no service to run (see --help)")
	}
	return o, specs, nil
}

// parseSpec reads SERVICE[:NAME] FLAG....
func parseSpec(f []string) (spec, error) {
	if len(f) == 0 {
		return spec{}, errors.New("empty: want SERVICE[:NAME] FLAG...")
	}
	svc, name, _ := strings.Cut(f[0], ":")
	if _, ok := services[svc]; !ok {
		return spec{}, fmt.Errorf("%q is not crisim, executor, pleg, planner or node", svc)
	}
	if strings.Contains(f[0], ":") && !validName.MatchString(name) {
		return spec{}, fmt.Errorf("name %q: want letters, digits, '.', '_', '-' and '/' between them", name)
	}
	return spec{service: svc, name: name, args: f[1:]}, nil
}

// validName is a NAME: path segments of a log file under --log-dir,
// never leaving it.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`)

// readFile reads the services of --file.
func readFile(path string) ([]spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	defer f.Close()
	var specs []spec
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		s, err := parseSpec(fields)
		if err != nil {
			return nil, fmt.Errorf("--file %s line %d: %w", path, line, err)
		}
		specs = append(specs, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("--file %s: no service in it", path)
	}
	return specs, nil
}

// nameSpecs gives every unnamed service SERVICE-N and refuses a name used
// twice.
func nameSpecs(specs []spec) error {
	n := map[string]int{}
	seen := map[string]bool{}
	for i := range specs {
		if specs[i].name == "" {
			specs[i].name = fmt.Sprintf("%s-%d", specs[i].service, n[specs[i].service])
		}
		n[specs[i].service]++
		if seen[specs[i].name] {
			return fmt.Errorf("two services are named %q", specs[i].name)
		}
		seen[specs[i].name] = true
	}
	return nil
}

// withoutFlagVars is the environment the services see: the process's,
// without the SYNCPOD_* variables that would set the same flag of every
// service (every planner's --listen, say).
func withoutFlagVars(k string) string {
	if strings.HasPrefix(k, server.EnvPrefix) {
		return ""
	}
	return os.Getenv(k)
}

// prefixWriter writes whole lines to w, each prefixed, one writer at a
// time (mu is shared by every writer to w).
type prefixWriter struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	var out []byte
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		out = append(out, p.prefix...)
		out = append(out, p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
	}
	if len(out) > 0 {
		if _, err := p.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}
