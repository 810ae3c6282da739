package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/validate"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func newClient(t *testing.T) plannerv1.PlannerServiceClient {
	t.Helper()
	return serveService(t, Options{})
}

func threeContainerPod(policy syncpodv1.RestartPolicy) *syncpodv1.Pod {
	p := &syncpodv1.Pod{Name: "demo", Spec: &syncpodv1.PodSpec{RestartPolicy: policy}}
	for _, n := range []string{"web", "db", "cache"} {
		p.Spec.Containers = append(p.Spec.Containers, &syncpodv1.Container{Name: n, Image: "busybox:1.36"})
	}
	return p
}

func names(ss []*syncpodv1.ContainerStart) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.GetName())
	}
	return out
}

func TestPlanFreshPod(t *testing.T) {
	c := newClient(t)
	resp, err := c.Plan(context.Background(), &plannerv1.PlanRequest{Pod: threeContainerPod(0)})
	if err != nil {
		t.Fatal(err)
	}
	a := resp.GetActions()
	if !a.GetCreateSandbox() || !a.GetKillPod() || a.GetAttempt() != 0 || a.GetSandboxId() != "" ||
		a.GetSandboxReason() != syncpodv1.SandboxReason_SANDBOX_REASON_NO_SANDBOX {
		t.Errorf("R-2.1 sandbox decision wrong: %v", a)
	}
	if got := names(a.GetContainersToStart()); !slices.Equal(got, []string{"web", "db", "cache"}) {
		t.Errorf("starts = %v, want all three in spec order", got)
	}
	for _, s := range a.GetContainersToStart() {
		if s.GetReason() != syncpodv1.StartReason_START_REASON_NEW_SANDBOX || s.GetSpecHash() != plan.SpecHash(&syncpodv1.Container{Name: s.GetName(), Image: "busybox:1.36"}) {
			t.Errorf("start %v: want NEW_SANDBOX with the spec hash", s)
		}
	}
}

func TestPlanCrashedContainerPerPolicy(t *testing.T) {
	c := newClient(t)
	cases := []struct {
		name       string
		policy     syncpodv1.RestartPolicy
		exit       int32
		wantStart  bool
		wantReason string
	}{
		{"R-4.2 Always exit 1: restarted", syncpodv1.RestartPolicy_RESTART_POLICY_ALWAYS, 1, true, "restart policy Always"},
		{"R-4.2 Always exit 0: restarted", syncpodv1.RestartPolicy_RESTART_POLICY_ALWAYS, 0, true, "restart policy Always"},
		{"R-4.2 OnFailure exit 1: restarted", syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE, 1, true, "restart policy OnFailure"},
		{"R-4.2 OnFailure exit 0: left down", syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE, 0, false, ""},
		{"R-4.2 Never exit 1: left down", syncpodv1.RestartPolicy_RESTART_POLICY_NEVER, 1, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := threeContainerPod(tc.policy)
			o := &syncpodv1.ObservedPod{Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, Ip: "10.0.0.2", CreatedAt: &timestamppb.Timestamp{Seconds: 100}}}}
			for i, ctr := range pod.Spec.Containers {
				st := &syncpodv1.ObservedContainer{Id: fmt.Sprintf("c%d", i), Name: ctr.Name, State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SpecHash: plan.SpecHash(ctr), SandboxId: "s1"}
				if ctr.Name == "db" {
					st.State, st.ExitCode = syncpodv1.ContainerState_CONTAINER_STATE_EXITED, tc.exit
				}
				o.Containers = append(o.Containers, st)
			}
			resp, err := c.Plan(context.Background(), &plannerv1.PlanRequest{Pod: pod, Observed: o})
			if err != nil {
				t.Fatal(err)
			}
			a := resp.GetActions()
			if a.GetKillPod() || a.GetCreateSandbox() {
				t.Errorf("pod-level action for one crashed container: %v", a)
			}
			if !tc.wantStart {
				if !plan.IsEmpty(a) {
					t.Errorf("want no action, got %v", a)
				}
				return
			}
			want := fmt.Sprintf("container db exited with %d; %s", tc.exit, tc.wantReason)
			if ss := a.GetContainersToStart(); len(ss) != 1 || ss[0].GetName() != "db" || ss[0].GetMessage() != want ||
				ss[0].GetReason() != syncpodv1.StartReason_START_REASON_EXITED || a.GetSandboxId() != "s1" {
				t.Errorf("want db restarted in s1 with %q, got %v", want, a)
			}
		})
	}
}

func TestPlanInvalidRequest(t *testing.T) {
	c := newClient(t)
	pod := &syncpodv1.Pod{Name: "Bad_Name", Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{
		{Name: "web", Image: "busybox"},
		{Name: "web", Image: ""},
		{Name: "db", Image: "busybox", Ports: []*syncpodv1.ContainerPort{{ContainerPort: 70000}}},
	}}}
	o := &syncpodv1.ObservedPod{Containers: []*syncpodv1.ObservedContainer{{Id: "c1", Name: "web", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SandboxId: "gone"}}}
	probes := []*syncpodv1.ContainerProbeResults{{Name: "nope"}}
	_, err := c.Plan(context.Background(), &plannerv1.PlanRequest{Pod: pod, Observed: o, Probes: probes})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("code = %v (%v), want InvalidArgument", st.Code(), err)
	}
	want := []string{
		"pod.name",
		"pod.spec.containers[1].image",
		"pod.spec.containers[1].name",
		"pod.spec.containers[2].ports[0].container_port",
		"observed.containers[0].sandbox_id",
		"probes[0].name",
	}
	var got []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				got = append(got, v.GetField())
				if v.GetDescription() == "" {
					t.Errorf("violation %s has no description", v.GetField())
				}
			}
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n got %q\nwant %q", got, want)
	}
	for _, p := range want {
		if !strings.Contains(st.Message(), p+":") {
			t.Errorf("message does not list %s: %s", p, st.Message())
		}
	}
}

func TestPlanMissingPod(t *testing.T) {
	c := newClient(t)
	_, err := c.Plan(context.Background(), &plannerv1.PlanRequest{})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
}

func TestToStatus(t *testing.T) {
	invalid := validate.Errors{{Path: "a", Message: "bad"}, {Path: "b", Message: "worse"}}
	cases := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"validation", invalid, codes.InvalidArgument},
		{"wrapped validation", fmt.Errorf("ctx: %w", invalid), codes.InvalidArgument},
		{"canceled", context.Canceled, codes.Canceled},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"status passes through", status.Error(codes.NotFound, "x"), codes.NotFound},
		{"other", errors.New("boom"), codes.Internal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.Code(errgrpc.ToGRPCOp("Op", tc.err)); got != tc.want {
				t.Errorf("code = %v, want %v", got, tc.want)
			}
		})
	}
	st := status.Convert(errgrpc.ToGRPCOp("Op", invalid))
	if len(st.Details()) != 1 || len(st.Details()[0].(*errdetails.BadRequest).GetFieldViolations()) != 2 {
		t.Errorf("details = %v, want one BadRequest with 2 violations", st.Details())
	}
}
