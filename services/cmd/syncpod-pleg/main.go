// Command syncpod-pleg is the pod lifecycle event generator: it watches the CRI runtime and streams lifecycle events.
// See DESIGN.md; flags: syncpod-pleg --help.
package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/syncpod/syncpod/pleg/service"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	"github.com/syncpod/syncpod/services/server"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("syncpod-pleg", flag.ContinueOnError)
	common := server.RegisterFlags(fs, server.Defaults{Listen: "127.0.0.1:7003", MetricsListen: "127.0.0.1:9103"})
	if done, code := server.Start(fs, common, args, getenv, stdout, stderr); done {
		return code
	}
	logger := common.Logger(stderr, fs.Name())
	reg := prometheus.NewRegistry()
	srv, err := server.New(common.Options(logger, reg))
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	plegv1.RegisterPlegServiceServer(srv.GRPC(), service.New())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(ctx) })
	if err := g.Wait(); err != nil {
		logger.Error("exiting on error", "err", err)
		return 1
	}
	return 0
}
