package store

import (
	"context"
	"maps"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/allocation"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// allocationOf is a record's allocation; a record stored before
// allocations were kept has what its pod asks for admitted.
func allocationOf(rec *plannerv1.PodRecord) *plannerv1.PodAllocation {
	if a := rec.GetAllocation(); a != nil {
		return a
	}
	return allocation.Initial(rec.GetPod())
}

// holders are the pods other than uid that hold resources on the node
// as they run: every stored pod whose status is not terminal.
func (s *Store) holders(tx *bolt.Tx, uid string) ([]*syncpodv1.Pod, error) {
	recs, err := listTx(tx, Filter{})
	if err != nil {
		return nil, err
	}
	var out []*syncpodv1.Pod
	for _, r := range recs {
		if r.GetPod().GetUid() == uid || terminal(r.GetStatus().GetPhase()) {
			continue
		}
		out = append(out, allocation.Pod(r.GetPod(), allocationOf(r)))
	}
	return out, nil
}

func terminal(p syncpodv1.PodPhase) bool {
	return p == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED || p == syncpodv1.PodPhase_POD_PHASE_FAILED
}

// retryDeferred decides every deferred resize again, oldest pod first,
// each beside the pods as they then run (the kubelet's
// RetryPendingResizes): called in the transaction that freed room. It
// returns the (old, new) records it changed, written, to publish.
func (s *Store) retryDeferred(tx *bolt.Tx) ([][2]*plannerv1.PodRecord, error) {
	if len(s.deferred) == 0 {
		return nil, nil
	}
	// Only the indexed records can be Pending; read just those.
	recs := make([]*plannerv1.PodRecord, 0, len(s.deferred))
	for _, uid := range slices.Sorted(maps.Keys(s.deferred)) {
		rec, err := lookup(tx, &plannerv1.PodRef{Uid: uid})
		if err != nil {
			return nil, err
		}
		if rec != nil {
			recs = append(recs, rec)
		}
	}
	var changed [][2]*plannerv1.PodRecord
	for _, old := range allocation.Pending(recs) {
		if old.GetPod().GetDeletionTime() != nil {
			continue
		}
		others, err := s.holders(tx, old.GetPod().GetUid())
		if err != nil {
			return nil, err
		}
		next := allocation.Decide(old.GetPod(), old.GetAllocation(), others, s.opts.Capacity)
		if proto.Equal(next, old.GetAllocation()) {
			continue
		}
		cur := proto.Clone(old).(*plannerv1.PodRecord)
		cur.Allocation = next
		if err := s.writeRecord(tx, cur); err != nil {
			return nil, err
		}
		changed = append(changed, [2]*plannerv1.PodRecord{old, cur})
	}
	return changed, nil
}

// publishRetried tells watchers of the records retryDeferred changed.
func (s *Store) publishRetried(changed [][2]*plannerv1.PodRecord, now time.Time) {
	for _, c := range changed {
		s.hub.publish(c[0], c[1], now)
	}
}

// RetryDeferred decides every deferred resize again, in its own
// transaction: for a caller that knows room was freed outside the store.
func (s *Store) RetryDeferred(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.deferredStale && len(s.deferred) == 0 {
		// Nothing waits: no transaction, no commit.
		return nil
	}
	var retried [][2]*plannerv1.PodRecord
	err := s.write(func(tx *bolt.Tx) error {
		var err error
		retried, err = s.retryDeferred(tx)
		return err
	})
	if err != nil {
		return err
	}
	s.publishRetried(retried, s.opts.Now())
	return nil
}
