package plan_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// which sidecars the kill of a terminating pod keeps running.
func TestSidecarsToKeepRunning(t *testing.T) {
	at := func(s int) *timestamppb.Timestamp { return timestamppb.New(time.Unix(int64(1000+s), 0)) }
	always := syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	pod := &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{
		InitContainers: []*syncpodv1.Container{
			{Name: "first", RestartPolicy: always}, {Name: "setup"}, {Name: "second", RestartPolicy: always},
		},
		Containers: []*syncpodv1.Container{{Name: "app"}},
	}}
	const (
		running = syncpodv1.ContainerState_CONTAINER_STATE_RUNNING
		exited  = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
		created = syncpodv1.ContainerState_CONTAINER_STATE_CREATED
		unknown = syncpodv1.ContainerState_CONTAINER_STATE_UNKNOWN
		ready   = syncpodv1.SandboxState_SANDBOX_STATE_READY
	)
	ctr := func(id, name string, st syncpodv1.ContainerState, sandbox string, created int) *syncpodv1.ObservedContainer {
		return &syncpodv1.ObservedContainer{Id: id, Name: name, State: st, SandboxId: sandbox, CreatedAt: at(created)}
	}
	s1 := &syncpodv1.ObservedSandbox{Id: "s1", State: ready, CreatedAt: at(1)}
	for _, tc := range []struct {
		name string
		o    *syncpodv1.ObservedPod
		want []string
	}{
		{"running and exited sidecars, spec order; never the regular init container", &syncpodv1.ObservedPod{
			Sandboxes: []*syncpodv1.ObservedSandbox{s1},
			Containers: []*syncpodv1.ObservedContainer{ctr("a", "second", exited, "s1", 5), ctr("b", "first", running, "s1", 2),
				ctr("c", "setup", exited, "s1", 3), ctr("d", "app", running, "s1", 6)},
		}, []string{"first", "second"}},
		{"the newest instance decides", &syncpodv1.ObservedPod{
			Sandboxes: []*syncpodv1.ObservedSandbox{s1},
			Containers: []*syncpodv1.ObservedContainer{ctr("a", "first", running, "s1", 2), ctr("b", "first", unknown, "s1", 7),
				ctr("c", "second", running, "s1", 3), ctr("d", "second", created, "s1", 8)},
		}, nil},
		{"a sidecar never started is not started by the kill", &syncpodv1.ObservedPod{
			Sandboxes:  []*syncpodv1.ObservedSandbox{s1},
			Containers: []*syncpodv1.ObservedContainer{ctr("a", "first", running, "s1", 2)},
		}, []string{"first"}},
		{"only instances of the newest sandbox count", &syncpodv1.ObservedPod{
			Sandboxes:  []*syncpodv1.ObservedSandbox{s1, {Id: "s2", State: ready, CreatedAt: at(10)}},
			Containers: []*syncpodv1.ObservedContainer{ctr("a", "first", running, "s1", 2), ctr("b", "second", running, "s2", 11)},
		}, []string{"second"}},
		{"nothing without a ready sandbox", &syncpodv1.ObservedPod{
			Sandboxes:  []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY, CreatedAt: at(1)}},
			Containers: []*syncpodv1.ObservedContainer{ctr("a", "first", running, "s1", 2)},
		}, nil},
		{"nothing without a sandbox", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, cs := range plan.SidecarsToKeepRunning(pod, tc.o) {
				if cs.GetSpecHash() != plan.SpecHash(pod.GetSpec().GetInitContainers()[0]) && cs.GetName() == "first" {
					t.Errorf("%s: spec hash %q, want the container's", cs.GetName(), cs.GetSpecHash())
				}
				got = append(got, cs.GetName())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
