package service

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/syncpod/syncpod/executor/validate"
	"github.com/syncpod/syncpod/internal/testsummary"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// badCase is one malformed request and the field its error must name.
type badCase struct {
	name  string
	call  func(ctx context.Context, c executorv1.ExecutorServiceClient) error
	field string
}

func applyCase(name, field string, mutate func(*executorv1.ApplyActionsRequest)) badCase {
	req := &executorv1.ApplyActionsRequest{Pod: goodPod(), Actions: &syncpodv1.PodActions{
		CreateSandbox: true, KillPod: true,
		InitContainersToStart: []*syncpodv1.ContainerStart{{Name: "init", SpecHash: "h"}},
	}}
	mutate(req)
	return badCase{name: name, field: field, call: func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
		_, err := c.ApplyActions(ctx, req)
		return err
	}}
}

// TestBadInputEveryRPC is the executor's part of the bad-input table:
// every RPC, InvalidArgument naming the field, and no CRI call at all
// (nothing created, stopped or pulled) and no back-off entry written.
func TestBadInputEveryRPC(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	many := func(n int) []*syncpodv1.Container {
		out := make([]*syncpodv1.Container, n)
		for i := range out {
			out[i] = &syncpodv1.Container{Name: fmt.Sprintf("c%d", i), Image: "busybox:1.36", Command: []string{"sleep", "1000"}}
		}
		return out
	}
	cases := []badCase{
		applyCase("garbage uid", "pod.uid", func(r *executorv1.ApplyActionsRequest) { r.Pod.Uid = "garbage-uid" }),
		applyCase("bad name", "pod.name", func(r *executorv1.ApplyActionsRequest) { r.Pod.Name = "Bad Name!" }),
		applyCase("1 MB name", "pod.name", func(r *executorv1.ApplyActionsRequest) { r.Pod.Name = huge }),
		applyCase("bad namespace", "pod.namespace", func(r *executorv1.ApplyActionsRequest) { r.Pod.Namespace = "Bad_NS" }),
		applyCase("duplicate container names", "pod.spec.containers[1].name", func(r *executorv1.ApplyActionsRequest) {
			r.Pod.Spec.Containers = append(r.Pod.Spec.Containers, &syncpodv1.Container{Name: "web", Image: "busybox:1.36"})
		}),
		applyCase("10,000 containers", "pod.spec", func(r *executorv1.ApplyActionsRequest) {
			r.Pod.Spec.Containers = many(10000)
			for _, c := range r.Pod.Spec.Containers {
				r.Actions.ContainersToStart = append(r.Actions.ContainersToStart, &syncpodv1.ContainerStart{Name: c.GetName()})
			}
		}),
		applyCase("65 containers, one over the planner's limit", "pod.spec", func(r *executorv1.ApplyActionsRequest) { r.Pod.Spec.Containers = many(64) }),
		applyCase("1 MB env value", "pod.spec.containers[0].env[0].value", func(r *executorv1.ApplyActionsRequest) {
			r.Pod.Spec.Containers[0].Env = []*syncpodv1.EnvVar{{Name: "BIG", Value: huge}}
		}),
		applyCase("1 MB argument", "pod.spec.containers[0].args[0]", func(r *executorv1.ApplyActionsRequest) { r.Pod.Spec.Containers[0].Args = []string{huge} }),
		applyCase("negative grace period", "pod.spec.termination_grace_period_seconds", func(r *executorv1.ApplyActionsRequest) {
			r.Pod.Spec.TerminationGracePeriodSeconds = proto.Int64(-1)
		}),
		applyCase("container started twice", "actions.containers_to_start[1].name", func(r *executorv1.ApplyActionsRequest) {
			r.Actions.ContainersToStart = []*syncpodv1.ContainerStart{{Name: "web"}, {Name: "web"}}
		}),
		applyCase("start names no container", "actions.containers_to_start[0].name", func(r *executorv1.ApplyActionsRequest) {
			r.Actions.ContainersToStart = []*syncpodv1.ContainerStart{{Name: huge}}
		}),
		applyCase("huge spec hash", "actions.init_containers_to_start[0].spec_hash", func(r *executorv1.ApplyActionsRequest) {
			r.Actions.InitContainersToStart[0].SpecHash = huge
		}),
		applyCase("huge sandbox id", "actions.sandbox_id", func(r *executorv1.ApplyActionsRequest) { r.Actions.SandboxId = huge }),
		applyCase("kill the same container twice", "actions.containers_to_kill[1].container_id", func(r *executorv1.ApplyActionsRequest) {
			r.Actions.ContainersToKill = []*syncpodv1.ContainerKill{{ContainerId: "c1", Name: "web"}, {ContainerId: "c1", Name: "web"}}
		}),
		applyCase("observed restart count < 0", "observed.containers[0].restart_count", func(r *executorv1.ApplyActionsRequest) {
			r.Observed = &syncpodv1.ObservedPod{Uid: testUID, Containers: []*syncpodv1.ObservedContainer{{Id: "c1", Name: "web", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, RestartCount: -5}}}
		}),
		applyCase("observed of another pod", "observed.uid", func(r *executorv1.ApplyActionsRequest) { r.Observed = &syncpodv1.ObservedPod{Uid: huge} }),
		applyCase("no actions", "actions", func(r *executorv1.ApplyActionsRequest) { r.Actions = nil }),
		{"remove: empty id", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{ContainerIds: []string{"a", ""}})
			return err
		}, "container_ids[1]"},
		{"remove: huge id", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{SandboxIds: []string{huge}})
			return err
		}, "sandbox_ids[0]"},
		{"remove: too many ids", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{ContainerIds: make([]string, validate.MaxRemove+1)})
			return err
		}, "container_ids"},
		{"remove: forget a pod with no uid", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{ForgetPod: &executorv1.ForgetPodRef{Namespace: "default", Name: "web"}})
			return err
		}, "forget_pod.uid"},
		{"remove: forget a pod whose name climbs out of the log root", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{ForgetPod: &executorv1.ForgetPodRef{Uid: testUID, Namespace: "default", Name: "../../etc"}})
			return err
		}, "forget_pod.name"},
		{"remove: forget a pod with a 1 MB namespace", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{ForgetPod: &executorv1.ForgetPodRef{Uid: testUID, Namespace: huge, Name: "web"}})
			return err
		}, "forget_pod.namespace"},
		{"list back-offs: bad uid", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.ListBackoffs(ctx, &executorv1.ListBackoffsRequest{PodUid: huge})
			return err
		}, "pod_uid"},
		{"reset back-off: no uid", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.ResetBackoff(ctx, &executorv1.ResetBackoffRequest{})
			return err
		}, "pod_uid"},
		{"reset back-off: bad container name", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.ResetBackoff(ctx, &executorv1.ResetBackoffRequest{PodUid: testUID, ContainerName: "Bad Name!"})
			return err
		}, "container_name"},
		{"exec: no command", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.ExecSync(ctx, &executorv1.ExecSyncRequest{ContainerId: "c1"})
			return err
		}, "command"},
		{"exec: huge argument", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.ExecSync(ctx, &executorv1.ExecSyncRequest{ContainerId: "c1", Command: []string{"sh", huge}})
			return err
		}, "command[1]"},
		{"exec: timeout over 10m", func(ctx context.Context, c executorv1.ExecutorServiceClient) error {
			_, err := c.ExecSync(ctx, &executorv1.ExecSyncRequest{ContainerId: "c1", Command: []string{"true"}, Timeout: durationpb.New(-1)})
			return err
		}, "timeout"},
	}
	c, rt, store := newClient(t)
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(ctx, c)
			checkBad(t, err, tc.field)
		})
	}
	if calls := rt.GetCalls(); len(calls) != 0 {
		t.Errorf("bad requests reached the runtime: %v", calls)
	}
	if entries, err := store.List(""); err != nil || len(entries) != 0 {
		t.Errorf("back-off entries after bad requests: %v %v", entries, err)
	}
	testsummary.Record(t, "bad inputs tried: %d (executor)", len(cases))
}

// checkBad asserts InvalidArgument, a BadRequest violation for field, a
// message that names it, and a message that echoes no large input.
func checkBad(t *testing.T, err error, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("code %v (%.300v), want InvalidArgument", st.Code(), err)
	}
	if !strings.Contains(st.Message(), field+": ") {
		t.Errorf("message %.300q does not name %s", st.Message(), field)
	}
	if len(st.Message()) > 8<<10 {
		t.Errorf("message of %d bytes", len(st.Message()))
	}
	found := false
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				found = found || v.GetField() == field
			}
		}
	}
	if !found {
		t.Errorf("no BadRequest violation for %s in %.300q", field, st.Message())
	}
}

// TestObservedFromARuntimeIsAccepted: a container whose sandbox is not in
// the observed pod (created between the PLEG's two list calls, or already
// removed) is what a runtime can report; the executor must not refuse the
// change set for it.
func TestObservedFromARuntimeIsAccepted(t *testing.T) {
	c, _, _ := newClient(t)
	_, err := c.ApplyActions(context.Background(), &executorv1.ApplyActionsRequest{Pod: goodPod(),
		Observed: &syncpodv1.ObservedPod{Uid: testUID, Containers: []*syncpodv1.ObservedContainer{
			{Id: "c-old", Name: "web", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, SandboxId: "gone"}}},
		Actions: &syncpodv1.PodActions{CreateSandbox: true, KillPod: true}})
	if err != nil {
		t.Fatalf("ApplyActions: %v", err)
	}
}

// TestOrphanKillIsAccepted: housekeeping kills a runtime pod the planner
// does not know with a kill-only change set and an empty spec; its uid
// and name are whatever the runtime holds. That must still work, while
// the same identity is refused as soon as anything would be created.
func TestOrphanKillIsAccepted(t *testing.T) {
	c, _, _ := newClient(t)
	orphan := &syncpodv1.Pod{Uid: "uid-from-another-tool", Name: "Some_Name", Namespace: "k8s.io", Spec: &syncpodv1.PodSpec{}}
	if _, err := c.ApplyActions(context.Background(), &executorv1.ApplyActionsRequest{Pod: orphan,
		Actions: &syncpodv1.PodActions{KillPod: true}}); err != nil {
		t.Fatalf("kill of an orphan: %v", err)
	}
	_, err := c.ApplyActions(context.Background(), &executorv1.ApplyActionsRequest{Pod: orphan,
		Actions: &syncpodv1.PodActions{KillPod: true, CreateSandbox: true}})
	checkBad(t, err, "pod.uid")
	_, err = c.ApplyActions(context.Background(), &executorv1.ApplyActionsRequest{Pod: &syncpodv1.Pod{Uid: strings.Repeat("u", 1<<20), Name: "x", Spec: &syncpodv1.PodSpec{}},
		Actions: &syncpodv1.PodActions{KillPod: true}})
	checkBad(t, err, "pod.uid")
}
