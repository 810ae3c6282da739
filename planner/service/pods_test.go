package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/executor/executortest"
	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/internal/grpctest"
	"github.com/syncpod/syncpod/planner/store"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeValidate stands in for validate.Pod: every problem at once.
func fakeValidate(p *syncpodv1.Pod) error {
	var errs []error
	if p.GetName() == "" {
		errs = append(errs, errors.New("name: required"))
	}
	if len(p.GetSpec().GetContainers()) == 0 {
		errs = append(errs, errors.New("spec.containers: at least one is required"))
	}
	for i, c := range p.GetSpec().GetContainers() {
		if c.GetImage() == "" {
			errs = append(errs, fmt.Errorf("spec.containers[%d].image: required", i))
		}
	}
	return errors.Join(errs...)
}

// openStore opens a planner store in a fresh directory, its clock at t0
// and fakeValidate its rules; it is closed when the test ends.
func openStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "planner.db")
	st, err := store.Open(store.Options{Path: path, Now: func() time.Time { return t0 }, Validate: fakeValidate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, path
}

// serveService serves New(opts) in memory and returns a client of it.
func serveService(t *testing.T, opts Options) plannerv1.PlannerServiceClient {
	t.Helper()
	return plannerv1.NewPlannerServiceClient(grpctest.Serve(t, func(s *grpc.Server) { plannerv1.RegisterPlannerServiceServer(s, New(opts)) }))
}

// serveWithExecutor serves the service on a fresh store with a fake
// executor, and returns a client of it, the store and the executor.
func serveWithExecutor(t *testing.T) (plannerv1.PlannerServiceClient, *store.Store, *executortest.Executor) {
	t.Helper()
	st, _ := openStore(t)
	ex := &executortest.Executor{}
	execConn := grpctest.Serve(t, func(s *grpc.Server) { executorv1.RegisterExecutorServiceServer(s, ex) })
	return serveService(t, Options{Pods: st, Executor: executorv1.NewExecutorServiceClient(execConn)}), st, ex
}

func setup(t *testing.T) (plannerv1.PlannerServiceClient, *store.Store) {
	t.Helper()
	st, _ := openStore(t)
	return serveService(t, Options{Pods: st}), st
}

func demoPod(name, image string) *syncpodv1.Pod {
	return &syncpodv1.Pod{Name: name, Labels: map[string]string{"app": name},
		Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "c", Image: image}}}}
}

func wantCode(t *testing.T, err error, code codes.Code, msgHas ...string) {
	t.Helper()
	if got := status.Code(err); got != code {
		t.Fatalf("code = %v (%v), want %v", got, err, code)
	}
	for _, m := range msgHas {
		if !strings.Contains(status.Convert(err).Message(), m) {
			t.Errorf("message %q lacks %q", status.Convert(err).Message(), m)
		}
	}
}

func TestApplyPod(t *testing.T) {
	ctx := context.Background()
	c, _ := setup(t)

	res, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("web", "nginx")})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetResult() != plannerv1.ApplyResult_APPLY_RESULT_CREATED || res.GetPod().GetUid() == "" ||
		res.GetPod().GetGeneration() != 1 || !res.GetPod().GetCreationTime().AsTime().Equal(t0) {
		t.Errorf("ApplyPod = %v", res)
	}
	res2, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("web", "nginx")})
	if err != nil || res2.GetResult() != plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED {
		t.Errorf("re-apply = %v, %v; want UNCHANGED", res2.GetResult(), err)
	}
	res3, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("web", "nginx:2")})
	if err != nil || res3.GetResult() != plannerv1.ApplyResult_APPLY_RESULT_UPDATED || res3.GetPod().GetGeneration() != 2 {
		t.Errorf("update = %v, %v; want UPDATED generation 2", res3, err)
	}

	t.Run("invalid pod lists every field error and stores nothing", func(t *testing.T) {
		bad := &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "a"}, {Name: "b"}}}}
		_, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: bad})
		wantCode(t, err, codes.InvalidArgument, "name: required", "spec.containers[0].image: required", "spec.containers[1].image: required")
		l, _ := c.ListPods(ctx, &plannerv1.ListPodsRequest{})
		if len(l.GetRecords()) != 1 {
			t.Errorf("%d pods stored, want 1", len(l.GetRecords()))
		}
	})
	t.Run("missing pod", func(t *testing.T) {
		_, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{})
		wantCode(t, err, codes.InvalidArgument, "pod: required")
	})
	t.Run("another uid is FailedPrecondition", func(t *testing.T) {
		p := demoPod("web", "nginx:2")
		p.Uid = "00000000-0000-4000-8000-00000000e15e"
		_, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: p})
		wantCode(t, err, codes.FailedPrecondition, "delete")
	})
}

func TestDeleteAndGetPod(t *testing.T) {
	ctx := context.Background()
	c, st := setup(t)
	created, _ := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("web", "nginx")})
	uid := created.GetPod().GetUid()

	_, err := c.DeletePod(ctx, &plannerv1.DeletePodRequest{Pod: &plannerv1.PodRef{Name: "nope"}})
	wantCode(t, err, codes.NotFound)
	_, err = c.DeletePod(ctx, &plannerv1.DeletePodRequest{})
	wantCode(t, err, codes.InvalidArgument)
	_, err = c.DeletePod(ctx, &plannerv1.DeletePodRequest{Pod: &plannerv1.PodRef{Name: "web"}, GracePeriodSeconds: proto.Int64(-3)})
	wantCode(t, err, codes.InvalidArgument, "grace_period_seconds")

	del, err := c.DeletePod(ctx, &plannerv1.DeletePodRequest{Pod: &plannerv1.PodRef{Name: "web"}, GracePeriodSeconds: proto.Int64(0)})
	if err != nil {
		t.Fatal(err)
	}
	if del.GetPod().GetDeletionTime() == nil || del.GetPod().DeletionGracePeriodSeconds == nil || del.GetPod().GetDeletionGracePeriodSeconds() != 0 {
		t.Errorf("DeletePod = %v; want deletion time and grace 0", del.GetPod())
	}
	// Changing a terminating pod is FailedPrecondition.
	_, err = c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("web", "nginx:9")})
	wantCode(t, err, codes.FailedPrecondition, "terminating")

	// GetPod returns spec, status and events.
	_, _ = st.UpdateStatus(ctx, uid, &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING})
	_ = st.AppendEvents(ctx, uid, []*syncpodv1.Event{{Type: syncpodv1.EventType_EVENT_TYPE_NORMAL, Reason: "Killing", LastTime: timestamppb.New(t0)}})
	got, err := c.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Uid: uid}})
	if err != nil {
		t.Fatal(err)
	}
	r := got.GetRecord()
	if r.GetPod().GetName() != "web" || r.GetStatus().GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING || len(r.GetEvents()) != 1 {
		t.Errorf("GetPod = %v", r)
	}
	_, err = c.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Name: "web", Uid: "00000000-0000-4000-8000-000000000001"}})
	wantCode(t, err, codes.NotFound)
	_, err = c.GetPod(ctx, &plannerv1.GetPodRequest{})
	wantCode(t, err, codes.InvalidArgument)

	// Once the sync loop removes it, it is gone.
	if err := st.Remove(ctx, uid); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Name: "web"}})
	wantCode(t, err, codes.NotFound)
}

func TestListPods(t *testing.T) {
	ctx := context.Background()
	c, st := setup(t)
	for _, x := range []struct{ ns, name string }{{"b", "web"}, {"a", "db"}, {"a", "web"}} {
		p := demoPod(x.name, "img")
		p.Namespace = x.ns
		r, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: p})
		if err != nil {
			t.Fatal(err)
		}
		_ = st.AppendEvents(ctx, r.GetPod().GetUid(), []*syncpodv1.Event{{Reason: "Started", LastTime: timestamppb.New(t0)}})
	}
	cases := []struct {
		name, ns, sel string
		want          string
		code          codes.Code
	}{
		{name: "all, sorted", want: "a/db a/web b/web"},
		{name: "namespace", ns: "a", want: "a/db a/web"},
		{name: "selector", sel: "app=web", want: "a/web b/web"},
		{name: "set selector", sel: "app notin (web)", want: "a/db"},
		{name: "bad selector", sel: "app in (", code: codes.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.ListPods(ctx, &plannerv1.ListPodsRequest{Namespace: tc.ns, LabelSelector: tc.sel})
			if tc.code != codes.OK {
				wantCode(t, err, tc.code, "label_selector")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res.GetRecords() {
				got = append(got, r.GetPod().GetNamespace()+"/"+r.GetPod().GetName())
				if len(r.GetEvents()) != 0 {
					t.Errorf("ListPods returned events for %s", r.GetPod().GetName())
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("ListPods = %v, want %s", got, tc.want)
			}
		})
	}
}

func TestWatchPods(t *testing.T) {
	c, _ := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("web", "nginx")})
	_, _ = c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("db", "pg")})

	stream, err := c.WatchPods(ctx, &plannerv1.WatchPodsRequest{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() string {
		t.Helper()
		ev, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(ev.GetType().String(), "WATCH_EVENT_TYPE_") + " " + ev.GetRecord().GetPod().GetName() + " " + ev.GetRecord().GetPod().GetSpec().GetContainers()[0].GetImage()
	}
	if got := recv(); got != "ADDED web nginx" {
		t.Errorf("first event = %q", got)
	}
	_, _ = c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("db", "pg:2")}) // filtered out
	_, _ = c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: demoPod("web", "nginx:2")})
	if got := recv(); got != "MODIFIED web nginx:2" {
		t.Errorf("second event = %q", got)
	}

	bad, err := c.WatchPods(ctx, &plannerv1.WatchPodsRequest{LabelSelector: "=="})
	if err == nil {
		_, err = bad.Recv()
	}
	wantCode(t, err, codes.InvalidArgument)
}

// WatchPods answers with its header as soon as it has subscribed, events
// or none, so a client can read pods after it knowing no later change is
// lost (syncpodctl's waits do). Without the header, Header blocks until the
// first event, and a watch of nothing has none.
func TestWatchPodsHeaderMeansSubscribed(t *testing.T) {
	c, _ := setup(t)
	// A header that waits for an event would wait out this bound.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := c.WatchPods(ctx, &plannerv1.WatchPodsRequest{Namespace: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatalf("header of a watch with no events: %v, want it at once", err)
	}
	// Subscribed: a pod applied now is the stream's first event.
	p := demoPod("late", "nginx")
	p.Namespace = "empty"
	if _, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: p}); err != nil {
		t.Fatal(err)
	}
	ev, err := stream.Recv()
	if err != nil || ev.GetRecord().GetPod().GetName() != "late" {
		t.Fatalf("first event after the header: %v, %v; want late", ev, err)
	}
}

func TestNoStoreIsUnavailable(t *testing.T) {
	s := New(Options{})
	_, err := s.ApplyPod(context.Background(), &plannerv1.ApplyPodRequest{})
	wantCode(t, err, codes.Unavailable)
	_, err = s.GetPod(context.Background(), &plannerv1.GetPodRequest{})
	wantCode(t, err, codes.Unavailable)
}

// TestStoreErrorsStatus: each store sentinel carries its class, and the
// RPC's name prefixes the message.
func TestStoreErrorsStatus(t *testing.T) {
	cases := []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{fmt.Errorf("x: %w", store.ErrInvalid), codes.InvalidArgument},
		{fmt.Errorf("x: %w", store.ErrNotFound), codes.NotFound},
		{fmt.Errorf("x: %w", store.ErrUIDMismatch), codes.FailedPrecondition},
		{fmt.Errorf("x: %w", store.ErrTerminating), codes.FailedPrecondition},
		{fmt.Errorf("x: %w", store.ErrImmutable), codes.FailedPrecondition},
		{fmt.Errorf("x: %w", store.ErrConfigNotFound), codes.NotFound},
		{store.ErrClosed, codes.Unavailable},
		{store.ErrSchemaTooNew, codes.Internal},
		{context.Canceled, codes.Canceled},
		{fmt.Errorf("rpc: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{status.Error(codes.Aborted, "kept"), codes.Aborted},
		{errors.New("disk on fire"), codes.Internal},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			got := errgrpc.ToGRPCOp("Op", tc.err)
			if status.Code(got) != tc.want {
				t.Errorf("ToGRPCOp(%v) = %v, want %v", tc.err, status.Code(got), tc.want)
			}
			if tc.err != nil && tc.want != codes.Aborted && !strings.HasPrefix(status.Convert(got).Message(), "Op: ") {
				t.Errorf("message %q does not start with the RPC's name", status.Convert(got).Message())
			}
		})
	}
}
