package wake_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/containerd/containerd/api/events"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/syncpod/syncpod/pleg/wake"
	"github.com/syncpod/syncpod/pleg/wake/waketest"
)

// wakeUps runs Watch on a fake events service, lets send send envelopes
// once the subscription is made, and requires exactly want wake-ups: the
// stream delivers in order, so once the server has ended it after the
// envelopes, Watch has seen them all. It returns the subscription's
// filters.
func wakeUps(t *testing.T, send func(*waketest.Server), want int) []string {
	t.Helper()
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
	send(srv)
	for i := range want {
		select {
		case <-woken:
		case <-ctx.Done():
			t.Fatalf("%d wake-ups, want %d", i, want)
		}
	}
	srv.End(status.Error(codes.Internal, "gone"))
	if err := <-done; status.Code(err) != codes.Internal {
		t.Errorf("Watch returned %v, want the stream's Internal error", err)
	}
	if n := len(woken); n != 0 {
		t.Errorf("%d more wake-ups, want %d in all", n, want)
	}
	return filters
}

// TestWatchWakesOnTheCRINamespacesTaskEventsOnly: the subscription asks
// containerd for the task events of the CRI namespace, and an envelope
// the runtime sends anyway (another namespace, another topic) wakes
// nothing.
func TestWatchWakesOnTheCRINamespacesTaskEventsOnly(t *testing.T) {
	filters := wakeUps(t, func(srv *waketest.Server) {
		srv.Send("default", "/tasks/exit")       // another namespace (ctr's)
		srv.Send("moby", "/tasks/exit")          // Docker's
		srv.Send("k8s.io", "/containers/update") // not a task event
		srv.Send("k8s.io", "/tasks/exec-added")  // an exec being set up
		srv.Send("k8s.io", "/tasks/exit")        // the one that wakes
		srv.Send("k8s.io", "/snapshot/remove")
		srv.Send("k8s.io", "/tasks/start") // and this one
	}, 2)
	want := []string{
		`namespace=="k8s.io",topic=="/tasks/create"`, `namespace=="k8s.io",topic=="/tasks/start"`,
		`namespace=="k8s.io",topic=="/tasks/exit"`, `namespace=="k8s.io",topic=="/tasks/oom"`,
		`namespace=="k8s.io",topic=="/tasks/delete"`,
	}
	if !slices.Equal(filters, want) {
		t.Errorf("filters %q, want %q", filters, want)
	}
}

// exitEvent is a /tasks/exit event as containerd sends it: the type URL
// is the message's full name, with no prefix.
func exitEvent(t *testing.T, containerID, id string) *anypb.Any {
	t.Helper()
	exit := &events.TaskExit{ContainerID: containerID, ID: id, Pid: 42, ExitStatus: 0}
	b, err := proto.Marshal(exit)
	if err != nil {
		t.Fatal(err)
	}
	return &anypb.Any{TypeUrl: string(exit.ProtoReflect().Descriptor().FullName()), Value: b}
}

// TestAnExecsExitWakesNothing: an exec's process (an exec probe's) exits
// with a /tasks/exit whose process id is not the container's; it changes
// nothing a relist reads and wakes nothing, while the exit of the task's
// own process, and an exit whose event does not decode, wake.
func TestAnExecsExitWakesNothing(t *testing.T) {
	const c = "0123abcd"
	wakeUps(t, func(srv *waketest.Server) {
		srv.SendEvent("k8s.io", "/tasks/exit", exitEvent(t, c, "probe-exec-1"))                           // an exec's: nothing
		srv.SendEvent("k8s.io", "/tasks/exit", exitEvent(t, c, c))                                        // the container's: wakes
		srv.SendEvent("k8s.io", "/tasks/exit", &anypb.Any{TypeUrl: "containerd.events.TaskExit"})         // empty: wakes
		srv.SendEvent("k8s.io", "/tasks/exit", &anypb.Any{TypeUrl: "example.Other", Value: []byte{0xff}}) // not an exit: wakes
		srv.SendEvent("k8s.io", "/tasks/exit", exitEvent(t, c, "probe-exec-2"))                           // nothing
	}, 3)
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
