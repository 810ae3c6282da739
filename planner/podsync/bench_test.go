package podsync_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/podsync"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// BenchmarkStepSteady is the most common pod sync: a running pod of three
// containers with nothing to do (plan, then the status to store).
func BenchmarkStepSteady(b *testing.B) {
	start := time.Unix(1_700_000_000, 0)
	at := func(s int) *timestamppb.Timestamp { return timestamppb.New(start.Add(time.Duration(s) * time.Second)) }
	pod := &syncpodv1.Pod{Uid: "uid-bench", Name: "web", Namespace: "default", Spec: &syncpodv1.PodSpec{
		HostNetwork: true,
		Containers: []*syncpodv1.Container{
			{Name: "app", Image: "busybox", Command: []string{"sleep", "3600"}},
			{Name: "sidecar", Image: "busybox", Command: []string{"sleep", "3600"}},
			{Name: "metrics", Image: "busybox", Command: []string{"sleep", "3600"}},
		},
	}}
	obs := &syncpodv1.ObservedPod{Uid: pod.GetUid(), Name: pod.GetName(), Namespace: pod.GetNamespace(),
		Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, CreatedAt: at(0), HostNetwork: true}}}
	for i, c := range pod.GetSpec().GetContainers() {
		obs.Containers = append(obs.Containers, &syncpodv1.ObservedContainer{Id: "c-" + c.GetName(), Name: c.GetName(),
			State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SpecHash: plan.SpecHash(c), SandboxId: "s1",
			CreatedAt: at(i + 1), StartedAt: at(i + 1), Image: c.GetImage()})
	}
	rec := &plannerv1.PodRecord{Pod: pod}
	now := start.Add(time.Minute)
	w := podsync.Step(podsync.Input{Record: rec, Observed: obs, Now: now})
	if w.Apply != nil || w.Status == nil {
		b.Fatalf("the steady pod has work: %+v", w)
	}
	rec.Status = w.Status
	for b.Loop() {
		podsync.Step(podsync.Input{Record: rec, Observed: obs, Now: now})
	}
}
