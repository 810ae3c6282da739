// Command syncpodctl is the kubectl-like command line for syncpod; see
// `syncpodctl --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/syncpod/syncpod/node/kubeconv"
	"github.com/syncpod/syncpod/services/ctl"
)

// gcPercent is syncpodctl's GOGC when the environment sets none. Most runs
// live for milliseconds and allocate a few megabytes while they start
// (package tables, the first decode of a manifest): a collection then,
// at the runtime's 4 MB first goal, costs more time than the memory it
// frees is worth. Long-running commands (logs -f, get -w) keep a small
// live heap, so a goal of five times it stays small.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := ctl.Run(ctx, os.Args[1:], ctl.Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		ConvertKubernetes: kubeconv.ConvertManifest,
	})
	stop()
	os.Exit(code)
}
