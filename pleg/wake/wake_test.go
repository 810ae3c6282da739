package wake_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/pleg/wake"
	"github.com/syncpod/syncpod/pleg/wake/waketest"
)

// TestWatchWakesOnTheCRINamespacesTaskEventsOnly: the subscription asks
// containerd for the task events of the CRI namespace, and an envelope
// the runtime sends anyway (another namespace, another topic) wakes
// nothing.
func TestWatchWakesOnTheCRINamespacesTaskEventsOnly(t *testing.T) {
	srv, conn := waketest.Start(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	woken := make(chan struct{}, 100)
	done := make(chan error, 1)
	go func() { done <- (&wake.Source{Conn: conn}).Watch(ctx, func() { woken <- struct{}{} }) }()
	if !srv.WaitStreams(ctx, 1, 1) {
		t.Fatal("no subscription")
	}
	_, filters := srv.Subscribed()
	want := []string{
		`namespace=="k8s.io",topic=="/tasks/create"`, `namespace=="k8s.io",topic=="/tasks/start"`,
		`namespace=="k8s.io",topic=="/tasks/exit"`, `namespace=="k8s.io",topic=="/tasks/oom"`,
		`namespace=="k8s.io",topic=="/tasks/delete"`,
	}
	if !slices.Equal(filters, want) {
		t.Errorf("filters %q, want %q", filters, want)
	}
	srv.Send("default", "/tasks/exit")       // another namespace (ctr's)
	srv.Send("moby", "/tasks/exit")          // Docker's
	srv.Send("k8s.io", "/containers/update") // not a task event
	srv.Send("k8s.io", "/tasks/exec-added")  // an exec being set up
	srv.Send("k8s.io", "/tasks/exit")        // the one that wakes
	srv.Send("k8s.io", "/snapshot/remove")
	srv.Send("k8s.io", "/tasks/start") // and this one
	for range 2 {
		select {
		case <-woken:
		case <-ctx.Done():
			t.Fatal("the CRI namespace's task events woke nothing")
		}
	}
	// The stream delivers in order: once the server has ended the
	// stream after the envelopes, Watch has seen them all.
	srv.End(status.Error(codes.Internal, "gone"))
	if err := <-done; status.Code(err) != codes.Internal {
		t.Errorf("Watch returned %v, want the stream's Internal error", err)
	}
	if n := len(woken); n != 0 {
		t.Errorf("%d more wake-ups, want only the two task events of k8s.io", n)
	}
}

// TestWatchReportsUnimplemented: a runtime without the service (crisim,
// CRI-O) answers Unimplemented, which Watch returns as it is.
func TestWatchReportsUnimplemented(t *testing.T) {
	_, conn := waketest.Start(t, true)
	err := (&wake.Source{Conn: conn}).Watch(t.Context(), func() { t.Error("woken") })
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("Watch returned %v, want Unimplemented", err)
	}
}

// TestWatchEndsWithItsContext: a cancelled Watch returns ctx's error.
func TestWatchEndsWithItsContext(t *testing.T) {
	srv, conn := waketest.Start(t, false)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&wake.Source{Conn: conn}).Watch(ctx, func() {}) }()
	if !srv.WaitStreams(t.Context(), 1, 1) {
		t.Fatal("no subscription")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch returned %v, want context.Canceled", err)
	}
}
