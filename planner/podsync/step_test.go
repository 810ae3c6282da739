package podsync_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/podsync"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// at least one dead container per name is kept.
func TestGarbageKeepsTheNewestDeadInstance(t *testing.T) {
	at := func(s int) *timestamppb.Timestamp { return timestamppb.New(time.Unix(int64(1000+s), 0)) }
	o := &syncpodv1.ObservedPod{
		Sandboxes: []*syncpodv1.ObservedSandbox{
			{Id: "old-stopped", State: syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY, CreatedAt: at(1)},
			{Id: "new", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, CreatedAt: at(10)},
		},
		Containers: []*syncpodv1.ObservedContainer{
			{Id: "in-old-sandbox", Name: "app", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, SandboxId: "old-stopped", CreatedAt: at(2)},
			{Id: "app-1", Name: "app", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, SandboxId: "new", CreatedAt: at(11)},
			{Id: "app-2", Name: "app", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, SandboxId: "new", CreatedAt: at(12)},
			{Id: "app-3", Name: "app", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SandboxId: "new", CreatedAt: at(13)},
			{Id: "job-1", Name: "job", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, SandboxId: "new", CreatedAt: at(11)},
		},
	}
	pod := &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "app"}, {Name: "job"}}}}
	r := podsync.Garbage(o, pod)
	containers, sandboxes := r.Containers, r.Sandboxes
	// app-3 runs; app-2 is the newest dead "app" (its last termination
	// state) and stays; app-1 goes; job-1 is the only "job" and stays.
	if want := []string{"app-1"}; !slices.Equal(containers, want) {
		t.Errorf("containers %v, want %v (dead ones beyond the newest dead per name, not those going with a sandbox)", containers, want)
	}
	if want := []string{"old-stopped"}; !slices.Equal(sandboxes, want) {
		t.Errorf("sandboxes %v, want %v", sandboxes, want)
	}
	// "job" removed from the spec: its last dead instance goes too.
	pod.Spec.Containers = pod.Spec.Containers[:1]
	if got, want := podsync.Garbage(o, pod).Containers, []string{"app-1", "job-1"}; !slices.Equal(got, want) {
		t.Errorf("containers %v, want %v once job left the spec", got, want)
	}
}

// an exited ephemeral container is kept (its newest instance) as
// any other: removed, it would count as never started and start again.
func TestGarbageKeepsAnExitedEphemeralContainer(t *testing.T) {
	at := func(s int) *timestamppb.Timestamp { return timestamppb.New(time.Unix(int64(1000+s), 0)) }
	o := &syncpodv1.ObservedPod{
		Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, CreatedAt: at(1)}},
		Containers: []*syncpodv1.ObservedContainer{
			{Id: "app-1", Name: "app", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SandboxId: "s1", CreatedAt: at(2)},
			{Id: "dbg-1", Name: "debugger", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, SandboxId: "s1", CreatedAt: at(3)},
		},
	}
	pod := &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "app"}},
		EphemeralContainers: []*syncpodv1.Container{{Name: "debugger"}}}}
	if got := podsync.Garbage(o, pod).Containers; len(got) != 0 {
		t.Errorf("removed %v, want the exited ephemeral container kept", got)
	}
}

// An orphan whose runtime state is already gone (its worker removed it just
// before housekeeping listed it) gives nothing to do: a second removal of
// a gone pod is neither sent nor an error.
func TestOrphanAlreadyGoneIsNothingToDo(t *testing.T) {
	w := podsync.Step(podsync.Input{Observed: &syncpodv1.ObservedPod{Uid: podUID}, Now: t0})
	if w.Apply != nil || !w.Remove.Empty() || w.Drop || w.Commits() || w.Err != nil || !w.Wake.IsZero() {
		t.Errorf("work = %+v, want nothing", w)
	}
}

// A deleted pod with nothing left is removed and dropped in one step, and
// nothing of its record is committed.
func TestDeletedPodWithNothingLeftIsDropped(t *testing.T) {
	del := timestamppb.New(t0)
	rec := &plannerv1.PodRecord{Pod: &syncpodv1.Pod{Uid: podUID, Name: "web", Namespace: "default", DeletionTime: del,
		Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox"}}}}}
	obs := &syncpodv1.ObservedPod{Uid: podUID,
		Sandboxes:  []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY, CreatedAt: del}},
		Containers: []*syncpodv1.ObservedContainer{{Id: "c1", Name: "app", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED, SandboxId: "s1", CreatedAt: del}},
	}
	before := proto.Clone(obs)
	w := podsync.Step(podsync.Input{Record: rec, Observed: obs, Now: t0.Add(time.Minute)})
	if w.Apply != nil || !w.Drop || w.Commits() || !slices.Equal(w.Remove.Containers, []string{"c1"}) || !slices.Equal(w.Remove.Sandboxes, []string{"s1"}) {
		t.Errorf("work = %+v, want remove c1 and s1, then drop", w)
	}
	if !proto.Equal(before, obs) {
		t.Error("Step modified the observed pod")
	}
}
