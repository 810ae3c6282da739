// Command syncpodctl is the kubectl-like command line for syncpod; see
// `syncpodctl --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/syncpod/syncpod/node/kubeconv"
	"github.com/syncpod/syncpod/services/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := ctl.Run(ctx, os.Args[1:], ctl.Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		ConvertKubernetes: kubeconv.ConvertManifest,
	})
	stop()
	os.Exit(code)
}
