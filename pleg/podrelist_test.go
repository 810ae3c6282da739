package pleg

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
)

// rendezvous holds each call of a group until all n of them are in, or
// until wait has passed: calls made one after the other never meet. Used
// in a synctest bubble, where wait passes only once nothing else can run.
type rendezvous struct {
	mu   sync.Mutex
	n    int
	in   int
	all  chan struct{}
	wait time.Duration
	met  bool
	late bool // a call gave up waiting for the others
}

func newRendezvous(n int) *rendezvous {
	return &rendezvous{n: n, all: make(chan struct{}), wait: 2 * time.Second}
}

func (r *rendezvous) join() {
	r.mu.Lock()
	r.in++
	if r.in == r.n {
		r.met = true
		close(r.all)
	}
	r.mu.Unlock()
	select {
	case <-r.all:
	case <-time.After(r.wait):
		r.mu.Lock()
		r.late = true
		r.mu.Unlock()
	}
}

func (r *rendezvous) allMet() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.met && !r.late
}

// meetingLists is a runtime whose two list calls meet at a rendezvous.
type meetingLists struct {
	*critest.Runtime
	lists *rendezvous
}

func (m *meetingLists) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	m.lists.join()
	return m.Runtime.ListPodSandbox(ctx, f)
}

func (m *meetingLists) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	m.lists.join()
	return m.Runtime.ListContainers(ctx, f)
}

// TestAPodRelistMakesItsCallsAtOnce_R13_7: the on-demand relist a sync
// waits for lists the pod's sandboxes and containers at once,
// then reads the status of its sandbox and of each container at once: two
// round trips to the runtime, not 2 + 1 + containers. The pod's status is
// the same as read one call after the other: every container, newest
// first, with its sandbox.
func TestAPodRelistMakesItsCallsAtOnce_R13_7(t *testing.T) {
	// In a bubble the rendezvous' wait is fake time, which passes only
	// when every goroutine is blocked: calls made at once always meet,
	// however loaded the machine, and calls one after the other never do.
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime()
		m := &meetingLists{Runtime: rt, lists: newRendezvous(2)}
		p, _ := newTest(t, nil, func(o *Options) { o.Runtime = m })
		ns := time.Now().UnixNano()
		rt.AddPodSandbox("u1", "sb1", 0, ns)
		rt.AddPodContainer("sb1", "c1", "a", "h", 0, ns+1)
		rt.AddPodContainer("sb1", "c2", "b", "h", 0, ns+2)
		statuses := newRendezvous(3)
		rt.SetInspectHook(func(context.Context, string) error { statuses.join(); return nil })
		if !p.RelistPod(context.Background(), "u1") {
			t.Fatal("the pod relist's list calls failed")
		}
		if !m.lists.allMet() {
			t.Error("ListPodSandbox and ListContainers were called one after the other")
		}
		if !statuses.allMet() {
			t.Error("the status calls of the pod's sandbox and two containers were made one after the other")
		}
		pod := cached(t, p, "u1")
		if got := fmt.Sprint(containerIDs(pod)); got != "[c2 c1]" {
			t.Fatalf("cached containers %s, want [c2 c1]", got)
		}
		for _, c := range pod.GetContainers() {
			if c.GetSandboxId() != "sb1" {
				t.Errorf("container %s in sandbox %q, want sb1", c.GetId(), c.GetSandboxId())
			}
		}
		if len(pod.GetSandboxes()) != 1 || pod.GetSandboxes()[0].GetId() != "sb1" {
			t.Errorf("cached sandboxes %v, want sb1", pod.GetSandboxes())
		}
	})
}

// TestAGlobalRelistKeepsItsStatusCallsWithinTheInspectBound: a global
// relist inspects InspectParallelism pods at once, and each pod's status
// calls one after the other, so the runtime never sees more status calls
// at once than --inspect-parallelism promises (a pod's own relist alone
// makes its calls together).
func TestAGlobalRelistKeepsItsStatusCallsWithinTheInspectBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime()
		p, _ := newTest(t, rt, func(o *Options) { o.InspectParallelism = 2 })
		ns := time.Now().UnixNano()
		for _, pod := range []string{"u1", "u2", "u3"} {
			rt.AddPodSandbox(pod, "sb-"+pod, 0, ns)
			for _, c := range []string{"a", "b", "c"} {
				rt.AddPodContainer("sb-"+pod, pod+"-"+c, c, "h", 0, ns+1)
			}
		}
		var mu sync.Mutex
		in, most, calls := 0, 0, 0
		rt.SetInspectHook(func(context.Context, string) error {
			mu.Lock()
			in++
			calls++
			most = max(most, in)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond) // fake time: every call in flight overlaps
			mu.Lock()
			in--
			mu.Unlock()
			return nil
		})
		if !p.Relist(context.Background()) {
			t.Fatal("relist failed")
		}
		if calls != 12 {
			t.Fatalf("%d status calls, want 12 (3 pods of a sandbox and 3 containers)", calls)
		}
		if most != 2 {
			t.Errorf("at most %d status calls at once, want 2 (two pods at once, one call each)", most)
		}
	})
}
