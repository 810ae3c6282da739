package cache

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func ctr(id, sandbox string, created time.Duration, st syncpodv1.ContainerState) *syncpodv1.ObservedContainer {
	return &syncpodv1.ObservedContainer{Id: id, SandboxId: sandbox, State: st, CreatedAt: timestamppb.New(t0.Add(created))}
}

func ids(p *syncpodv1.ObservedPod) string {
	var out []string
	for _, s := range p.GetSandboxes() {
		out = append(out, "sb:"+s.GetId())
	}
	for _, c := range p.GetContainers() {
		out = append(out, c.GetId()+":"+c.GetState().String()[len("CONTAINER_STATE_"):])
	}
	return fmt.Sprint(out)
}

const (
	running = syncpodv1.ContainerState_CONTAINER_STATE_RUNNING
	exited  = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
)

// TestApplyMergesByID: a delta changes only the objects it names, newest
// first order is kept, the stored status passed to Set is never modified,
// and R-14.2 (only newer) holds unless forced.
func TestApplyMergesByID(t *testing.T) {
	c := New()
	base := &syncpodv1.ObservedPod{Uid: "a", Name: "web",
		Sandboxes:  []*syncpodv1.ObservedSandbox{{Id: "s1", CreatedAt: timestamppb.New(t0)}},
		Containers: []*syncpodv1.ObservedContainer{ctr("c2", "s1", 2, running), ctr("c1", "s1", 1, running)},
	}
	keep := proto.Clone(base)
	c.Set("a", base, t0)
	read, _ := c.Get("a")

	steps := []struct {
		name    string
		d       Delta
		at      time.Duration
		applied bool
		want    string
	}{
		{"upsert-one", Delta{Containers: []*syncpodv1.ObservedContainer{ctr("c1", "s1", 1, exited)}}, 10, true, "[sb:s1 c2:RUNNING c1:EXITED]"},
		{"add-newest-first", Delta{Containers: []*syncpodv1.ObservedContainer{ctr("c3", "s1", 3, running)}}, 20, true, "[sb:s1 c3:RUNNING c2:RUNNING c1:EXITED]"},
		{"R-14.2/not-newer-refused", Delta{Containers: []*syncpodv1.ObservedContainer{ctr("c2", "s1", 2, exited)}}, 20, false, "[sb:s1 c3:RUNNING c2:RUNNING c1:EXITED]"},
		{"remove-one", Delta{RemoveContainers: []string{"c1"}}, 30, true, "[sb:s1 c3:RUNNING c2:RUNNING]"},
		{"forced-stale-removal", Delta{RemoveContainers: []string{"c2"}, Force: true}, 5, true, "[sb:s1 c3:RUNNING]"},
	}
	for _, st := range steps {
		if got := c.Apply("a", st.d, t0.Add(st.at)); got != st.applied {
			t.Errorf("%s: applied %v", st.name, got)
		}
		pod, _ := c.Get("a")
		if got := ids(pod); got != st.want {
			t.Errorf("%s: %s, want %s", st.name, got, st.want)
		}
	}
	if _, mod := c.Get("a"); !mod.Equal(t0.Add(30)) {
		t.Errorf("modified %v: a forced older removal moved it back", mod)
	}
	if pod, _ := c.Get("a"); pod.GetName() != "web" || !pod.GetObservedAt().AsTime().Equal(t0.Add(30)) {
		t.Errorf("identity/observed_at lost: %v", pod)
	}
	if !proto.Equal(base, keep) || ids(read) != "[sb:s1 c2:RUNNING c1:RUNNING]" {
		t.Error("Apply modified a status already handed out")
	}
	// Removing the last sandbox drops its containers and the pod, which
	// then reads as absent as of the removal.
	if !c.Apply("a", Delta{RemoveSandboxes: []string{"s1"}}, t0.Add(40)) || c.Len() != 0 {
		t.Fatalf("pod kept after its sandbox went: %d", c.Len())
	}
	if p, ok := c.Peek("a", t0.Add(39)); !ok || p.GetUid() != "a" || len(p.GetContainers()) != 0 {
		t.Errorf("absent pod: %v %v", p, ok)
	}
	if _, ok := c.Peek("a", t0.Add(40)); ok {
		t.Error("absence answered a wait newer than it")
	}
}

// TestApplyRefusesEventsOlderThanAbsence: a pod known absent (by a relist
// or a tombstone) is not brought back by an event older than that.
func TestApplyRefusesEventsOlderThanAbsence(t *testing.T) {
	d := Delta{Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s1"}}}
	c := New()
	c.UpdateTime(t0)
	if c.Apply("a", d, t0) || c.Len() != 0 {
		t.Error("event as old as the last relist revived an absent pod")
	}
	c.DeleteIfOlder("b", t0.Add(time.Second)) // a single-pod relist found b absent
	if c.Apply("b", d, t0.Add(time.Millisecond)) {
		t.Error("event older than b's tombstone revived it")
	}
	if !c.Apply("b", d, t0.Add(2*time.Second)) {
		t.Error("newer event refused")
	}
	c.UpdateTime(t0.Add(time.Hour))
	if len(c.absent) != 0 {
		t.Errorf("tombstones older than the global timestamp kept: %v", c.absent)
	}
}

// TestTombstoneAnswersNewerThan: a pod a single-pod relist found absent
// answers newer-than waits up to that relist without a global relist.
func TestTombstoneAnswersNewerThan(t *testing.T) {
	c := New()
	c.UpdateTime(t0)
	if _, ok := c.Peek("x", t0.Add(time.Second)); ok {
		t.Fatal("answered before anything was known")
	}
	c.DeleteIfOlder("x", t0.Add(2*time.Second))
	if p, ok := c.Peek("x", t0.Add(time.Second)); !ok || p.GetUid() != "x" {
		t.Fatalf("tombstone did not answer: %v %v", p, ok)
	}
	c.Set("x", &syncpodv1.ObservedPod{Uid: "x", Name: "back"}, t0.Add(3*time.Second))
	if p, ok := c.Peek("x", t0.Add(time.Second)); !ok || p.GetName() != "back" {
		t.Fatalf("a later status must win over the tombstone: %v", p)
	}
}

// TestSortedMatchesAFullSort: random upserts (some changing created_at)
// and removals keep the index equal to a map of the same objects sorted
// from scratch.
func TestSortedMatchesAFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := newSorted[*syncpodv1.ObservedContainer](nil)
	ref := map[string]*syncpodv1.ObservedContainer{}
	for i := range 5000 {
		id := fmt.Sprintf("c%02d", r.IntN(60))
		if r.IntN(4) == 0 {
			s.remove(id)
			delete(ref, id)
		} else {
			c := ctr(id, "s", time.Duration(r.IntN(20)), syncpodv1.ContainerState(r.IntN(4)))
			s.upsert(c)
			ref[id] = c
		}
		want := slices.SortedFunc(maps.Values(ref), newestFirst[*syncpodv1.ObservedContainer])
		if !slices.Equal(s.list, want) || len(s.byID) != len(ref) {
			t.Fatalf("step %d: index diverged from a full sort", i)
		}
	}
}
