package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/internal/grpctest"
	"github.com/syncpod/syncpod/pleg"
	"github.com/syncpod/syncpod/pleg/fanout"
	"github.com/syncpod/syncpod/proto/fielderr"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
)

type harness struct {
	rt     *critest.Runtime
	p      *pleg.PLEG
	client plegv1.PlegServiceClient
}

func start(t *testing.T) *harness {
	t.Helper()
	rt := critest.NewRuntime()
	p, err := pleg.New(pleg.Options{
		Runtime: rt, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry(),
		RelistPeriod: 10 * time.Millisecond, Evented: pleg.EventedOff,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done }) // after the server stops
	conn := grpctest.Serve(t, func(s *grpc.Server) { plegv1.RegisterPlegServiceServer(s, New(p)) })
	return &harness{rt: rt, p: p, client: plegv1.NewPlegServiceClient(conn)}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond with a deadline (no fixed sleeps).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatchFilterAndIncludeStatus(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	withStatus, err := h.client.Watch(ctx, &plegv1.WatchRequest{PodUids: []string{"u1"}, IncludeStatus: true})
	if err != nil {
		t.Fatal(err)
	}
	all, err := h.client.Watch(ctx, &plegv1.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two subscribers", func() bool { return h.p.Subscribers() == 2 })
	h.rt.AddPodSandbox("u2", "sb2", 0, 1)
	h.rt.AddPodSandbox("u1", "sb1", 0, 2)

	got, err := withStatus.Recv()
	if err != nil {
		t.Fatal(err)
	}
	ev := got.GetEvent()
	if ev.GetPodUid() != "u1" || ev.GetType() != plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED ||
		ev.GetContainerId() != "sb1" || ev.GetObserved().GetSandboxes()[0].GetId() != "sb1" || ev.GetTime() == nil {
		t.Fatalf("filtered stream got %v", ev)
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		r, err := all.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetEvent().GetObserved() != nil {
			t.Fatal("status attached without include_status")
		}
		seen[r.GetEvent().GetPodUid()] = true
	}
}

func TestWatchCancelFreesSubscription(t *testing.T) {
	h := start(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	stream, err := h.client.Watch(ctx, &plegv1.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "subscriber", func() bool { return h.p.Subscribers() == 1 })
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("recv after cancel: %v", err)
	}
	waitFor(t, "subscription freed", func() bool { return h.p.Subscribers() == 0 })
}

func TestGetPodStatusNewerThan(t *testing.T) {
	h := start(t)
	h.rt.AddPodSandbox("u1", "sb1", 0, 1)
	ctx := ctxT(t)
	// A status newer than now arrives with a later relist.
	resp, err := h.client.GetPodStatus(ctx, &plegv1.GetPodStatusRequest{PodUid: "u1", NewerThan: timestamppb.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetObserved().GetUid() != "u1" || len(resp.GetObserved().GetSandboxes()) != 1 {
		t.Fatalf("got %v", resp.GetObserved())
	}
	// A pod the runtime does not know reads as empty once the cache is newer.
	resp, err = h.client.GetPodStatus(ctx, &plegv1.GetPodStatusRequest{PodUid: "nope", NewerThan: timestamppb.Now()})
	if err != nil || resp.GetObserved().GetUid() != "nope" || len(resp.GetObserved().GetSandboxes()) != 0 {
		t.Fatalf("unknown pod: %v %v", resp, err)
	}
	// Far in the future: the deadline ends the wait.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = h.client.GetPodStatus(short, &plegv1.GetPodStatusRequest{PodUid: "u1", NewerThan: timestamppb.New(time.Now().Add(time.Hour))})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
}

func TestListPodStatuses(t *testing.T) {
	h := start(t)
	h.rt.AddPodSandbox("b", "sb-b", 0, 1)
	h.rt.AddPodSandbox("a", "sb-a", 0, 1)
	ctx := ctxT(t)
	// Wait for a global relist that saw both pods.
	var resp *plegv1.ListPodStatusesResponse
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		resp, err = h.client.ListPodStatuses(ctx, &plegv1.ListPodStatusesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if (len(resp.GetPods()) == 2 && resp.GetCacheTimestamp() != nil) || time.Now().After(deadline) {
			break
		}
	}
	if len(resp.GetPods()) != 2 || resp.GetPods()[0].GetUid() != "a" || resp.GetMode() != plegv1.PlegMode_PLEG_MODE_RELIST || resp.GetCacheTimestamp() == nil {
		t.Fatalf("got %v", resp)
	}
}

func TestValidation(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	stream, err := h.client.Watch(ctx, &plegv1.WatchRequest{PodUids: []string{"", "a", "a"}})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "pod_uids[0]: must not be empty") || !strings.Contains(err.Error(), `pod_uids[2]: duplicate "a"`) {
		t.Errorf("watch: %v", err)
	}
	_, err = h.client.GetPodStatus(ctx, &plegv1.GetPodStatusRequest{NewerThan: &timestamppb.Timestamp{Nanos: -1}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "pod_uid: required") || !strings.Contains(err.Error(), "newer_than:") {
		t.Errorf("get: %v", err)
	}
}

func TestErrorStatus(t *testing.T) {
	tests := []struct {
		err  error
		want codes.Code
		msg  string
	}{
		{nil, codes.OK, ""},
		{fmt.Errorf("x: %w", ErrInvalid), codes.InvalidArgument, ""},
		{context.DeadlineExceeded, codes.DeadlineExceeded, "no status newer than asked before the deadline"},
		{context.Canceled, codes.Canceled, "context canceled"},
		{fanout.ErrClosed, codes.Unavailable, "the PLEG closed this subscription; watch again"},
		{status.Error(codes.NotFound, "x"), codes.NotFound, "x"},
		{errors.New("boom"), codes.Internal, "boom"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.want), func(t *testing.T) {
			got := errgrpc.ToGRPC(classify(tc.err))
			if status.Code(got) != tc.want {
				t.Errorf("ToGRPC(classify(%v)) = %v, want %v", tc.err, status.Code(got), tc.want)
			}
			if tc.msg != "" && status.Convert(got).Message() != tc.msg {
				t.Errorf("ToGRPC(classify(%v)) says %q, want %q", tc.err, status.Convert(got).Message(), tc.msg)
			}
			if tc.want == codes.InvalidArgument && len(fielderr.FromStatus(status.Convert(got))) == 0 {
				t.Errorf("ToGRPC(classify(%v)): InvalidArgument without BadRequest details", tc.err)
			}
		})
	}
}
