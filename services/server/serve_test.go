package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/internal/proctest"
)

func serveTestServer(t *testing.T, logs *proctest.Buffer) *Server {
	t.Helper()
	s, err := New(Options{Listen: "127.0.0.1:0", InsecureTCP: true, Logger: slog.New(slog.NewTextHandler(logs, nil)), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestServeStopsCleanlyWithItsContext: when ctx ends every part stops, and
// a part that ends with context.Canceled is no failure: exit status 0.
func TestServeStopsCleanlyWithItsContext(t *testing.T) {
	var logs proctest.Buffer
	s := serveTestServer(t, &logs)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	code := make(chan int, 1)
	go func() {
		code <- s.Serve(ctx,
			func(ctx context.Context) error { close(started); <-ctx.Done(); return ctx.Err() },
			func(ctx context.Context) error { <-ctx.Done(); return nil })
	}()
	<-started
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("Serve = %d, want 0; logs:\n%s", c, logs.String())
	}
	if strings.Contains(logs.String(), "exiting on error") {
		t.Errorf("a stop by ctx logged an error:\n%s", logs.String())
	}
}

// TestServeFailsWithTheFirstError: a failing part ends the others (the
// server included) and the status is 1, with the error logged.
func TestServeFailsWithTheFirstError(t *testing.T) {
	var logs proctest.Buffer
	s := serveTestServer(t, &logs)
	boom := errors.New("boom")
	stopped := make(chan struct{})
	c := s.Serve(context.Background(),
		func(context.Context) error { return boom },
		func(ctx context.Context) error { <-ctx.Done(); close(stopped); return ctx.Err() })
	if c != 1 {
		t.Fatalf("Serve = %d, want 1", c)
	}
	<-stopped
	if !strings.Contains(logs.String(), "exiting on error") || !strings.Contains(logs.String(), "boom") {
		t.Errorf("logs lack the failure:\n%s", logs.String())
	}
}
