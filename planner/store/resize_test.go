package store

import (
	"context"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/allocation"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func sized(name, cpu string) *syncpodv1.Pod {
	p := pod(name, "nginx")
	p.Spec.Containers[0].Resources = &syncpodv1.ResourceRequirements{Requests: &syncpodv1.ResourceList{Cpu: cpu}}
	return p
}

func allocatedCPU(t *testing.T, s *Store, name string) (cpu, pending string) {
	t.Helper()
	rec, err := s.Get(context.Background(), &plannerv1.PodRef{Namespace: "default", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	a := rec.GetAllocation()
	return a.GetContainers()["main"].GetRequests().GetCpu(), a.GetPendingReason()
}

// TestResizeAllocation: a resize that fits is admitted in the
// transaction that stores the pod; one without room is Deferred, kept
// across a reopen, and admitted when a pod's removal frees the room; one
// beyond the node is Infeasible.
func TestResizeAllocation(t *testing.T) {
	ctx := context.Background()
	s, _, path := openTest(t, func(o *Options) { o.Capacity = allocation.Capacity{MilliCPU: 2000} })
	for _, p := range []*syncpodv1.Pod{sized("a", "500m"), sized("b", "1")} {
		if _, _, err := s.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name        string
		do          func() error
		wantCPU     string
		wantPending string
	}{
		{"fits: admitted", func() error { _, _, err := s.Apply(ctx, sized("a", "750m")); return err }, "750m", ""},
		{"no room: deferred", func() error { _, _, err := s.Apply(ctx, sized("a", "1500m")); return err }, "750m", allocation.ReasonDeferred},
		{"survives a reopen", func() error {
			if err := s.Close(); err != nil {
				return err
			}
			var err error
			s, err = Open(Options{Path: path, Validate: fakeValidate, Capacity: allocation.Capacity{MilliCPU: 2000}})
			return err
		}, "750m", allocation.ReasonDeferred},
		{"room freed: admitted", func() error {
			rec, err := s.Get(ctx, &plannerv1.PodRef{Namespace: "default", Name: "b"})
			if err != nil {
				return err
			}
			return s.Remove(ctx, rec.GetPod().GetUid())
		}, "1500m", ""},
		{"beyond the node: infeasible", func() error { _, _, err := s.Apply(ctx, sized("a", "3")); return err }, "1500m", allocation.ReasonInfeasible},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if cpu, pending := allocatedCPU(t, s, "a"); cpu != st.wantCPU || pending != st.wantPending {
			t.Errorf("%s: allocated cpu %q pending %q, want %q %q", st.name, cpu, pending, st.wantCPU, st.wantPending)
		}
	}
	t.Cleanup(func() { _ = s.Close() })
}

// TestDeferredIndex: the store finds the Deferred resizes from
// an index kept as records are written. A write transaction that changed
// it and then failed leaves it stale, and the next write rebuilds it from
// the file, so a removal still admits the waiting resize; with nothing
// Deferred, RetryDeferred writes nothing.
func TestDeferredIndex(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, func(o *Options) { o.Capacity = allocation.Capacity{MilliCPU: 2000} })
	for _, p := range []*syncpodv1.Pod{sized("a", "500m"), sized("b", "1")} {
		if _, _, err := s.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	writes := func() int64 { st := s.db.Stats(); return st.TxStats.GetWrite() }
	before := writes()
	if err := s.RetryDeferred(ctx); err != nil {
		t.Fatal(err)
	}
	if w := writes(); w != before {
		t.Errorf("RetryDeferred with nothing deferred wrote %d times", w-before)
	}

	if _, _, err := s.Apply(ctx, sized("a", "1500m")); err != nil {
		t.Fatal(err)
	}
	if cpu, pending := allocatedCPU(t, s, "a"); cpu != "500m" || pending != allocation.ReasonDeferred {
		t.Fatalf("a: allocated %q pending %q, want 500m Deferred", cpu, pending)
	}
	a, err := s.Get(ctx, &plannerv1.PodRef{Namespace: "default", Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// A transaction writes a as no longer waiting, then fails: the file
	// keeps a Deferred, the index must not forget it.
	s.mu.Lock()
	err = s.write(func(tx *bolt.Tx) error {
		cur := proto.Clone(a).(*plannerv1.PodRecord)
		cur.Allocation.PendingReason = ""
		if err := s.writeRecord(tx, cur); err != nil {
			return err
		}
		return errors.New("injected failure")
	})
	s.mu.Unlock()
	if err == nil {
		t.Fatal("the injected failure was lost")
	}
	if cpu, pending := allocatedCPU(t, s, "a"); cpu != "500m" || pending != allocation.ReasonDeferred {
		t.Fatalf("after the failed write a: allocated %q pending %q, want 500m Deferred", cpu, pending)
	}
	b, err := s.Get(ctx, &plannerv1.PodRef{Namespace: "default", Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, b.GetPod().GetUid()); err != nil {
		t.Fatal(err)
	}
	if cpu, pending := allocatedCPU(t, s, "a"); cpu != "1500m" || pending != "" {
		t.Errorf("after b's removal a: allocated %q pending %q, want 1500m admitted", cpu, pending)
	}
}
