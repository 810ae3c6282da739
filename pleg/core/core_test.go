package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/pleg/cache"
	"github.com/syncpod/syncpod/pleg/diff"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// published records what a State publishes, one line per event.
type published struct{ lines []string }

func (p *published) publish(events []diff.Event, _ *syncpodv1.ObservedPod, _ time.Time) {
	for _, e := range events {
		p.lines = append(p.lines, fmt.Sprintf("%s %s %s", e.PodUID, strings.TrimPrefix(e.Type.String(), "POD_LIFECYCLE_EVENT_TYPE_"), e.ContainerID))
	}
}

func listing(uid string, cstate runtimeapi.ContainerState) *observe.Listing {
	return &observe.Listing{
		UID:        uid,
		Sandboxes:  []*runtimeapi.PodSandbox{{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		Containers: []*runtimeapi.Container{{Id: "c1", PodSandboxId: "sb", State: cstate}},
	}
}

func observed(uid string, st syncpodv1.ContainerState, at time.Time) *syncpodv1.ObservedPod {
	return &syncpodv1.ObservedPod{
		Uid:        uid,
		ObservedAt: timestamppb.New(at),
		Sandboxes:  []*syncpodv1.ObservedSandbox{{Id: "sb", State: syncpodv1.SandboxState_SANDBOX_STATE_READY}},
		Containers: []*syncpodv1.ObservedContainer{{Id: "c1", Name: "app", State: st, SandboxId: "sb"}},
	}
}

// relist runs one relist of listings through s with every inspection
// answered by inspect, as the PLEG's loop does.
func relist(s *State, start time.Time, listings map[string]*observe.Listing, inspect func(*Inspection)) {
	for _, in := range s.Changed(listings) {
		if in.Listing != nil {
			inspect(in)
		}
		s.Apply(in, start, start)
	}
	s.Relisted(start)
}

// TestRelistPublishesChangesOnce: a new pod's sandbox and container
// publish CONTAINER_STARTED events and cache its status; the same
// picture again is no change and inspects nothing; the container's exit
// is CONTAINER_DIED.
func TestRelistPublishesChangesOnce(t *testing.T) {
	var pub published
	c := cache.New()
	s := New(c, pub.publish)
	t0 := time.Unix(100, 0)
	run := func(st runtimeapi.ContainerState, ost syncpodv1.ContainerState, at time.Time) {
		relist(s, at, map[string]*observe.Listing{"u1": listing("u1", st)}, func(in *Inspection) { in.Pod = observed("u1", ost, at) })
	}
	run(runtimeapi.ContainerState_CONTAINER_RUNNING, syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, t0)
	if got := strings.Join(pub.lines, "; "); got != "u1 CONTAINER_STARTED c1; u1 CONTAINER_STARTED sb" {
		t.Errorf("first relist published %q", got)
	}
	if pod, _ := c.Get("u1"); pod.GetContainers()[0].GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
		t.Errorf("cached %v", pod)
	}
	if todo := s.Changed(map[string]*observe.Listing{"u1": listing("u1", runtimeapi.ContainerState_CONTAINER_RUNNING)}); len(todo) != 0 {
		t.Errorf("an unchanged pod is inspected: %v", todo)
	}
	pub.lines = nil
	run(runtimeapi.ContainerState_CONTAINER_EXITED, syncpodv1.ContainerState_CONTAINER_STATE_EXITED, t0.Add(time.Second))
	if got := strings.Join(pub.lines, "; "); got != "u1 CONTAINER_DIED c1" {
		t.Errorf("exit published %q", got)
	}
}

// TestFailedInspectionRetried: a failed inspection publishes nothing and
// keeps the old record, so the next relist inspects the pod again and
// publishes the events then.
func TestFailedInspectionRetried(t *testing.T) {
	var pub published
	s := New(cache.New(), pub.publish)
	t0 := time.Unix(100, 0)
	l := map[string]*observe.Listing{"u1": listing("u1", runtimeapi.ContainerState_CONTAINER_RUNNING)}
	relist(s, t0, l, func(in *Inspection) { in.Err = fmt.Errorf("runtime hangs") })
	if len(pub.lines) != 0 || !s.Reinspecting("u1") {
		t.Fatalf("after a failed inspection: published %q, reinspecting %v", pub.lines, s.Reinspecting("u1"))
	}
	relist(s, t0.Add(time.Second), l, func(in *Inspection) {
		in.Pod = observed("u1", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, t0)
	})
	if len(pub.lines) != 2 || s.Reinspecting("u1") {
		t.Errorf("retry published %q, reinspecting %v", pub.lines, s.Reinspecting("u1"))
	}
}

// TestEventNewerThanRelistWins: a container event applied while a relist
// that started earlier inspects makes the relist's older picture give way:
// no CONTAINER_STARTED after the event's CONTAINER_DIED.
func TestEventNewerThanRelistWins(t *testing.T) {
	var pub published
	c := cache.New()
	s := New(c, pub.publish)
	t0 := time.Unix(100, 0)
	running := map[string]*observe.Listing{"u1": listing("u1", runtimeapi.ContainerState_CONTAINER_RUNNING)}
	relist(s, t0, running, func(in *Inspection) { in.Pod = observed("u1", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, t0) })
	pub.lines = nil

	start := t0.Add(time.Second)
	todo := s.Changed(map[string]*observe.Listing{"u1": listing("u1", runtimeapi.ContainerState_CONTAINER_CREATED)})
	stopped := &runtimeapi.ContainerEventResponse{
		ContainerId: "c1", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT,
		CreatedAt: start.Add(time.Millisecond).UnixNano(),
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{
			Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Uid: "u1"},
			Labels: map[string]string{crilabels.PodUID: "u1", crilabels.Managed: crilabels.ManagedValue},
		},
		ContainersStatuses: []*runtimeapi.ContainerStatus{{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: 2}},
	}
	n := s.ApplyEvents([]*runtimeapi.ContainerEventResponse{stopped}, start.Add(2*time.Millisecond))
	if n.Applied != 1 || n.Published != 1 || len(n.Lags) != 1 || n.Lags[0] != time.Millisecond {
		t.Fatalf("ApplyEvents %+v", n)
	}
	for _, in := range todo {
		in.Pod = observed("u1", syncpodv1.ContainerState_CONTAINER_STATE_CREATED, start)
		s.Apply(in, start, start)
	}
	if got := strings.Join(pub.lines, "; "); strings.Contains(got, "CONTAINER_STARTED") || !strings.Contains(got, "u1 CONTAINER_DIED c1") {
		t.Errorf("published %q: want the event's CONTAINER_DIED and nothing older after it", got)
	}
	if pod, _ := c.Get("u1"); pod.GetContainers()[0].GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
		t.Errorf("cache %v: the relist undid the event", pod.GetContainers())
	}
}
