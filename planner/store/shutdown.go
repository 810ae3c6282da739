package store

import (
	"context"
	"fmt"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// keyNodeShutdown is meta/node_shutdown: the node's graceful shutdown
// a binary NodeShutdown; absent when none is under way or
// pending recovery. It lives in the meta bucket every file has, so it
// needs no migration.
var keyNodeShutdown = []byte("node_shutdown")

// NodeShutdown returns the stored node shutdown, nil when none.
func (s *Store) NodeShutdown(ctx context.Context) (*plannerv1.NodeShutdown, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out *plannerv1.NodeShutdown
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketMeta).Get(keyNodeShutdown)
		if raw == nil {
			return nil
		}
		out = &plannerv1.NodeShutdown{}
		if err := proto.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%w: meta/%s: %v", ErrCorrupt, keyNodeShutdown, err)
		}
		return nil
	})
	return out, err
}

// SetNodeShutdown stores the node shutdown st; it returns once
// the write is committed.
func (s *Store) SetNodeShutdown(ctx context.Context, st *plannerv1.NodeShutdown) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := proto.Marshal(st)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyNodeShutdown, raw) })
}

// EndNodeShutdown clears the stored node shutdown and, in the same
// transaction, the status of each pod restart names whose stored
// status still satisfies it (R-24.5: those then start again once; a
// crash before the commit leaves both as they were). It returns the uids
// whose status it cleared.
func (s *Store) EndNodeShutdown(ctx context.Context, restart map[string]func(*plannerv1.PodRecord) bool) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	type change struct{ old, cur *plannerv1.PodRecord }
	var changes []change
	var cleared []string
	err := s.write(func(tx *bolt.Tx) error {
		for _, uid := range slices.Sorted(maps.Keys(restart)) {
			ok := restart[uid]
			old, err := lookup(tx, &plannerv1.PodRef{Uid: uid})
			if err != nil {
				return err
			}
			if old == nil || !ok(old) {
				continue
			}
			cur := proto.Clone(old).(*plannerv1.PodRecord)
			cur.Status = nil
			if err := s.writeRecord(tx, cur); err != nil {
				return err
			}
			changes = append(changes, change{old, cur})
			cleared = append(cleared, uid)
		}
		return tx.Bucket(bucketMeta).Delete(keyNodeShutdown)
	})
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		s.hub.publish(c.old, c.cur, s.opts.Now())
	}
	return cleared, nil
}
