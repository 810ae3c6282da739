// Command syncpodctl is the kubectl-like command line for syncpod; see
// `syncpodctl --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/syncpod/syncpod/planner/manifest"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := ctl.Run(ctx, os.Args[1:], ctl.Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		ConvertKubernetes: convertKubernetes,
	})
	stop()
	os.Exit(code)
}

// convertKubernetes converts one Kubernetes v1 Pod document with the
// planner's manifest package, the same conversion static manifests get.
func convertKubernetes(js []byte) (*syncpodv1.Pod, []string, error) {
	pods, issues, err := manifest.Parse(js)
	if err != nil {
		return nil, nil, err
	}
	if len(pods) != 1 {
		return nil, nil, fmt.Errorf("want one pod, found %d", len(pods))
	}
	warnings := make([]string, len(issues))
	for i, is := range issues {
		warnings[i] = is.String()
	}
	return pods[0], warnings, nil
}
