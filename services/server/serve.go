package server

import (
	"context"
	"errors"

	"golang.org/x/sync/errgroup"
)

// Serve runs the server together with the binary's long-running parts
// (each a Run(ctx) error) until ctx ends or one of them fails; then every
// part's context ends. It returns the binary's exit status: 0 after a stop
// by ctx (a part that ends with context.Canceled has stopped with it: no
// failure), 1 after logging the first failure ("exiting on error"). It is
// the end of every syncpod main: signals, then one errgroup.
func (s *Server) Serve(ctx context.Context, parts ...func(ctx context.Context) error) int {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Run(ctx) })
	for _, run := range parts {
		g.Go(func() error { return run(ctx) })
	}
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		s.opts.Logger.Error("exiting on error", "err", err)
		return 1
	}
	return 0
}
