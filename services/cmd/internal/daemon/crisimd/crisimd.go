// Package crisimd is syncpod-crisim, syncpod's embedded CRI runtime, as a
// library (see package daemon): the CRI gRPC API on a unix socket with
// containers that are host processes or simulated (package crisim). A
// binary that runs it must answer Shim first in its main.
package crisimd

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/listcodec"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/server"
	"github.com/syncpod/syncpod/services/server/access"
)

// defaultSocket is $XDG_RUNTIME_DIR/syncpod/crisim.sock, or
// /tmp/syncpod-crisim-<uid>/crisim.sock without XDG_RUNTIME_DIR.
func defaultSocket(getenv func(string) string) string {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "syncpod", "crisim.sock")
	}
	return filepath.Join(os.TempDir(), "syncpod-crisim-"+strconv.Itoa(os.Getuid()), "crisim.sock")
}

// defaultStateDir is the socket's path with ".state" for ".sock": each
// socket, so each crisim, gets its own state.
func defaultStateDir(sock string) string {
	return strings.TrimSuffix(sock, ".sock") + ".state"
}

// Shim is what the binary that calls Run must do first in main: when it
// was started as a container's shim (process mode runs this same
// executable with crisim.ShimArg), it runs the shim and exits with the
// status Shim returns (ok true).
func Shim(args []string) (code int, ok bool) {
	if len(args) > 0 && args[0] == crisim.ShimArg {
		return crisim.RunShim(os.Stdin, os.Stdout), true
	}
	return 0, false
}

// Run is syncpod-crisim, flags and all (see daemon.Env): it serves until ctx
// ends and returns the exit status its binary would.
func Run(ctx context.Context, env daemon.Env) int {
	env = env.Normal()
	args, getenv, stdout, stderr := env.Args, env.Getenv, env.Stdout, env.Stderr

	fs := flag.NewFlagSet("syncpod-crisim", flag.ContinueOnError)
	common := server.RegisterFlags(fs, server.Defaults{Listen: "unix://" + defaultSocket(getenv), MetricsListen: "127.0.0.1:9104"})
	mode := fs.String("mode", string(crisim.ModeProcess), "process: containers are host processes (NO ISOLATION, image ignored); simulated: no processes, for scale tests")
	unpullable := fs.String("unpullable", `(^|/)unpullable([:@]|$)`, "regexp: PullImage fails for matching image names (empty: every pull succeeds)")
	cgroupDriver := fs.String("cgroup-driver", "", "systemd or cgroupfs: the cgroup driver RuntimeConfig reports, for a kubelet that needs one (crisim makes no cgroups itself; empty: it reports none, and the executor makes no pod cgroups)")
	streamListen := fs.String("stream-listen", "127.0.0.1:0", "TCP address of the exec/attach/port-forward streaming server (loopback; port 0 picks one)")
	eventBuffer := fs.Int("event-buffer", crisim.DefaultEventBuffer, "events buffered per GetContainerEvents subscriber before its stream is cut")
	dataDir := fs.String("data-dir", "", "where crisim keeps its sandboxes, containers and images, so a restart re-adopts running containers; one crisim per directory (default in process mode: the socket path with .state for .sock; in simulated mode, where no process can be orphaned, state stays in memory unless this is set)")
	killOnExit := fs.Bool("kill-on-exit", false, "on SIGTERM/SIGINT kill every container (recorded as exited) instead of leaving them running for the next crisim")
	if done, code := server.Start(fs, common, args, getenv, stdout, stderr); done {
		return code
	}
	opts := crisim.Options{EventBuffer: *eventBuffer, Version: access.Version, KillOnShutdown: *killOnExit}
	if *cgroupDriver != "" {
		driver, ok := runtimeapi.CgroupDriver_value[strings.ToUpper(*cgroupDriver)]
		if !ok {
			fmt.Fprintf(stderr, "%s: --cgroup-driver: %q is not systemd or cgroupfs\n", fs.Name(), *cgroupDriver)
			return 2
		}
		d := runtimeapi.CgroupDriver(driver)
		opts.CgroupDriver = &d
	}
	m, err := crisim.ParseMode(*mode)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --mode: %v\n", fs.Name(), err)
		return 2
	}
	opts.Mode = m
	if *unpullable != "" {
		re, err := regexp.Compile(*unpullable)
		if err != nil {
			fmt.Fprintf(stderr, "%s: --unpullable: %v\n", fs.Name(), err)
			return 2
		}
		opts.Unpullable = re
	}
	network, sock, _ := server.SplitAddress(common.Listen) // validated by Start
	if network != "unix" {
		fmt.Fprintf(stderr, "%s: --listen: %q is not unix:///path; crisim serves CRI on a unix socket only\n", fs.Name(), common.Listen)
		return 2
	}
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		fmt.Fprintf(stderr, "%s: --listen: %v\n", fs.Name(), err)
		return 1
	}
	opts.StateDir = *dataDir
	if opts.StateDir == "" && m == crisim.ModeProcess {
		opts.StateDir = defaultStateDir(sock)
	}
	// The binary that runs Run answers crisim.ShimArg (see Shim).
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "%s: cannot find its own binary to run container shims: %v\n", fs.Name(), err)
		return 1
	}
	opts.Shim = &crisim.Shim{Path: self, Args: []string{crisim.ShimArg}}

	logger := common.Logger(stderr, fs.Name())
	reg := prometheus.NewRegistry()
	opts.Logger, opts.Registry = logger, reg
	rt, err := crisim.New(opts)
	if err != nil {
		logger.Error("cannot start", "err", err)
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 1
	}
	sopts := serverOptions(common, logger, reg)
	// The executor and the PLEG of this process call it in-process
	// (cri.WithInProcess).
	sopts.Local = env.Local
	srv, err := server.New(sopts)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	crisim.Register(srv.Registrar(), rt)
	if m == crisim.ModeProcess {
		logger.Warn("process mode: containers are plain host processes with NO ISOLATION; images are ignored")
	}
	streamLis, err := net.Listen("tcp", *streamListen)
	if err != nil {
		logger.Error("cannot listen for streaming", "address", *streamListen, "err", err)
		return 1
	}
	state := opts.StateDir
	if state == "" {
		state = "in memory"
	}
	fmt.Fprintf(stdout, "syncpod-crisim: CRI endpoint unix://%s (mode %s, state %s)\n", sock, m, state)

	ctx, stop := env.Context(ctx)
	defer stop()
	defer rt.Shutdown()
	env.ReadyNow()
	return srv.Serve(ctx, func(ctx context.Context) error { return rt.ServeStreams(ctx, streamLis) }, func(ctx context.Context) error {
		// Ends the event streams (so the gRPC drain is not held up by
		// them) and leaves the containers running for the next crisim,
		// or kills them with --kill-on-exit.
		<-ctx.Done()
		rt.Shutdown()
		return nil
	})
}

// serverOptions are the CRI server's: its list answers are sent from each
// item's kept encoding (a list codec), which crisim allows since it
// replaces a listed item rather than change it.
func serverOptions(common *server.Flags, logger *slog.Logger, reg *prometheus.Registry) server.Options {
	opts := common.Options(logger, reg)
	opts.Codec = listcodec.NewGRPC()
	return opts
}
