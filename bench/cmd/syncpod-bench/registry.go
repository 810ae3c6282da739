package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/syncpod/syncpod/bench/imageregistry"
)

// serveRegistry serves OCI image-layout archives as a read-only registry
// over plain HTTP (package imageregistry) until ctx ends: the conformance
// cluster's localhost:5000, inside its network namespace.
func serveRegistry(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:5000", "address to serve on (plain HTTP)")
	verbose := fs.Bool("v", false, "log every request")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: syncpod-bench registry [--listen ADDR] [-v] ARCHIVE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	reg, err := imageregistry.Load(fs.Args(), log)
	if err != nil {
		log.Error("cannot load the images", "err", err)
		return 1
	}
	defer reg.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Error("cannot listen", "address", *listen, "err", err)
		return 1
	}
	srv := &http.Server{Handler: reg, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("serving", "address", ln.Addr().String(), "images", reg.Images())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Error("serving", "err", err)
		return 1
	}
	return 0
}
