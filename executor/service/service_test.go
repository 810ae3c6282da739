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
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/executor/volumes"
	"github.com/syncpod/syncpod/internal/clocktest"
	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/internal/grpctest"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func newClient(t *testing.T) (executorv1.ExecutorServiceClient, *critest.Runtime, *backoff.Store) {
	t.Helper()
	rt := critest.NewRuntime()
	c, store := serveExecutor(t, rt, clocktest.New(clocktest.Start), nil)
	return c, rt, store
}

// serveExecutor serves the executor in memory on rt, with a fresh
// back-off store, clock (nil: the wall clock) and the volume manager vm
// (nil: none); it returns a client of it and the store.
func serveExecutor(t *testing.T, rt *critest.Runtime, clock backoff.Clock, vm *volumes.Manager) (executorv1.ExecutorServiceClient, *backoff.Store) {
	t.Helper()
	store, err := backoff.Open(filepath.Join(t.TempDir(), "b.db"), backoff.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	r, err := runner.New(runner.Config{
		Runtime: runtimeclient.NewRuntime(rt, nil, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(critest.NewImages("busybox:1.36"), nil, runtimeclient.Timeouts{}),
		Backoff: store, Clock: clock, LogDir: t.TempDir(), Volumes: vm,
	})
	if err != nil {
		t.Fatal(err)
	}
	conn := grpctest.Serve(t, func(s *grpc.Server) { executorv1.RegisterExecutorServiceServer(s, New(r, store, clock, nil)) })
	return executorv1.NewExecutorServiceClient(conn), store
}

const testUID = "0b6a7c8e-1f2d-4e3a-9b4c-5d6e7f8a9b0c"

func goodPod() *syncpodv1.Pod {
	return &syncpodv1.Pod{Uid: testUID, Name: "demo", Spec: &syncpodv1.PodSpec{HostNetwork: true,
		InitContainers: []*syncpodv1.Container{{Name: "init", Image: "busybox:1.36"}},
		Containers:     []*syncpodv1.Container{{Name: "web", Image: "busybox:1.36"}}}}
}

func TestApplyActionsValidation(t *testing.T) {
	c, _, _ := newClient(t)
	bad := goodPod()
	bad.Uid = ""
	bad.Spec.Containers[0].Resources = &syncpodv1.ResourceRequirements{Limits: &syncpodv1.ResourceList{Cpu: "lots"}}
	for _, tc := range []struct {
		name   string
		req    *executorv1.ApplyActionsRequest
		fields []string
	}{
		{"empty request", &executorv1.ApplyActionsRequest{}, []string{"pod", "actions"}},
		{"every problem at once", &executorv1.ApplyActionsRequest{Pod: bad, Actions: &syncpodv1.PodActions{
			InitContainersToStart: []*syncpodv1.ContainerStart{{Name: "web"}},
			ContainersToStart:     []*syncpodv1.ContainerStart{{Name: "nope"}, {}},
			ContainersToKill:      []*syncpodv1.ContainerKill{{Name: "web"}},
		}}, []string{
			"pod.uid", "pod.spec.containers[0].resources.limits.cpu",
			"actions.init_containers_to_start[0].name", "actions.containers_to_start[0].name",
			"actions.containers_to_start[1].name", "actions.containers_to_kill[0].container_id", "actions.sandbox_id",
		}},
		{"pod without a spec", &executorv1.ApplyActionsRequest{Pod: &syncpodv1.Pod{Uid: testUID, Name: "n"}, Actions: &syncpodv1.PodActions{KillPod: true}},
			[]string{"pod.spec"}},
		{"observed of another pod", &executorv1.ApplyActionsRequest{Pod: goodPod(), Observed: &syncpodv1.ObservedPod{Uid: "other"},
			Actions: &syncpodv1.PodActions{CreateSandbox: true}}, []string{"observed.uid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.ApplyActions(context.Background(), tc.req)
			if got := badFields(t, err); strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("fields %v, want %v", got, tc.fields)
			}
		})
	}
}

func TestApplyActionsAndBackoffRPCs(t *testing.T) {
	c, _, store := newClient(t)
	ctx := context.Background()
	resp, err := c.ApplyActions(ctx, &executorv1.ApplyActionsRequest{Pod: goodPod(), Actions: &syncpodv1.PodActions{
		KillPod: true, CreateSandbox: true, InitContainersToStart: []*syncpodv1.ContainerStart{{Name: "init", SpecHash: "h"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSandboxId() == "" || len(resp.GetSteps()) != 4 {
		t.Fatalf("resp %v", resp)
	}
	k := backoff.Key{PodUID: testUID, ContainerName: "web", SpecHash: "h"}
	if _, err := store.Next(k, backoff.PodRef{Name: "demo"}, time.Unix(1_700_000_000, 0)); err != nil {
		t.Fatal(err)
	}
	if res, err := store.Check(k, backoff.PodRef{}, time.Unix(1_700_000_000, 0)); err != nil || !res.InBackOff {
		t.Fatalf("Check: %+v %v", res, err)
	}
	list, err := c.ListBackoffs(ctx, &executorv1.ListBackoffsRequest{PodUid: testUID})
	if err != nil || len(list.GetEntries()) != 1 || list.GetEntries()[0].GetDelay().AsDuration() != 10*time.Second || list.GetEntries()[0].GetBackoffUntil() == nil {
		t.Fatalf("ListBackoffs %v %v", list, err)
	}
	if _, err := c.ResetBackoff(ctx, &executorv1.ResetBackoffRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("ResetBackoff without uid: %v", err)
	}
	rr, err := c.ResetBackoff(ctx, &executorv1.ResetBackoffRequest{PodUid: testUID, ContainerName: "web"})
	if err != nil || rr.GetRemoved() != 1 {
		t.Fatalf("ResetBackoff %v %v", rr, err)
	}
	rm, err := c.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{ContainerIds: []string{"gone"}})
	if err != nil || rm.GetResults()[0].GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
		t.Fatalf("RemoveResources %v %v", rm, err)
	}
	if _, err := c.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{SandboxIds: []string{""}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("RemoveResources empty id: %v", err)
	}
}

func TestRuntimeUnavailableIsUnavailable(t *testing.T) {
	c, rt, _ := newClient(t)
	rt.InjectError("RunPodSandbox", status.Error(codes.Unavailable, "connection refused"))
	_, err := c.ApplyActions(context.Background(), &executorv1.ApplyActionsRequest{Pod: goodPod(), Actions: &syncpodv1.PodActions{CreateSandbox: true}})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("err %v, want Unavailable", err)
	}
}

// TestErrorCodes: every class the executor meets maps to its code, as
// the handlers map them (classify, then errgrpc.ToGRPC).
func TestErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"invalid fields", fielderr.Errors{{Path: "pod", Message: "required"}}, codes.InvalidArgument},
		{"invalid sentinel", fmt.Errorf("x: %w", ErrInvalidArgument), codes.InvalidArgument},
		{"invalid back-off config", backoff.ErrInvalidConfig, codes.InvalidArgument},
		{"runtime unavailable", fmt.Errorf("run: %w", runtimeclient.ErrUnavailable), codes.Unavailable},
		{"runtime timeout", runtimeclient.ErrTimeout, codes.DeadlineExceeded},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"canceled", context.Canceled, codes.Canceled},
		{"not found", runtimeclient.ErrNotFound, codes.NotFound},
		{"name reserved", runtimeclient.ErrNameReserved, codes.AlreadyExists},
		{"store", fmt.Errorf("%w: disk", backoff.ErrStore), codes.Internal},
		{"store, timed out", fmt.Errorf("%w: %w", backoff.ErrStore, context.DeadlineExceeded), codes.DeadlineExceeded},
		{"status passes through", status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied},
		{"anything else", errors.New("boom"), codes.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := errgrpc.ToGRPC(classify(tc.err))
			if status.Code(got) != tc.want {
				t.Fatalf("code %v, want %v", status.Code(got), tc.want)
			}
			if tc.want == codes.InvalidArgument && len(fielderr.FromStatus(status.Convert(got))) == 0 {
				t.Error("InvalidArgument without BadRequest details")
			}
		})
	}
	if got := status.Convert(errgrpc.ToGRPC(classify(fmt.Errorf("%w: disk", backoff.ErrStore)))).Message(); got != "back-off store: backoff store: disk" {
		t.Errorf("a back-off store failure says %q", got)
	}
}

func TestExecSync(t *testing.T) {
	c, rt, _ := newClient(t)
	rt.ExecFunc = func(id string, cmd []string) (int32, []byte, error) {
		if id == "gone" {
			return 0, nil, status.Error(codes.NotFound, "no such container")
		}
		return int32(len(cmd)), nil, nil
	}
	ctx := context.Background()
	resp, err := c.ExecSync(ctx, &executorv1.ExecSyncRequest{ContainerId: "c1", Command: []string{"a", "b"}})
	if err != nil || resp.GetExitCode() != 2 {
		t.Fatalf("ExecSync = %v, %v; want exit code 2", resp, err)
	}
	if _, err := c.ExecSync(ctx, &executorv1.ExecSyncRequest{ContainerId: "gone", Command: []string{"a"}}); status.Code(err) != codes.NotFound {
		t.Fatalf("ExecSync on a missing container: %v, want NotFound", err)
	}
	_, err = c.ExecSync(ctx, &executorv1.ExecSyncRequest{Timeout: durationpb.New(time.Hour)})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("bad ExecSync: %v", err)
	}
	for _, field := range []string{"container_id", "command", "timeout"} {
		if !strings.Contains(st.Message(), field) {
			t.Errorf("message %q lacks %s", st.Message(), field)
		}
	}
}
