package backoff

import (
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

var bucketUserns = []byte("userns")

// ErrNoUserNamespace is AllocateUserNamespace finding every slot of the
// range taken.
var ErrNoUserNamespace = errors.New("could not find an empty slot to allocate a user namespace")

// AllocateUserNamespace returns the first host ID of pod's user namespace
// the one it holds, or the lowest free slot of size IDs among
// slots from first, committed before it returns, so that no restart hands
// one slot to two pods. A held range that is not a slot of this range
// (the range was reconfigured) is an error naming the pod: the pod keeps
// what its sandbox runs with until it is gone.
func (s *Store) AllocateUserNamespace(podUID string, first, size uint32, slots int) (uint32, error) {
	if size == 0 || slots <= 0 {
		return 0, fmt.Errorf("%w: no user namespace range", ErrStore)
	}
	slotOf := func(id uint32) (int, bool) {
		if id < first || (id-first)%size != 0 {
			return 0, false
		}
		i := int((id - first) / size)
		return i, i < slots
	}
	var got uint32
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUserns)
		if v := b.Get([]byte(podUID)); v != nil {
			id, err := parseHostID(podUID, v)
			if err != nil {
				return err
			}
			if _, ok := slotOf(id); !ok {
				return fmt.Errorf("pod %s holds the user namespace from host ID %d, outside the node's range", podUID, id)
			}
			got = id
			return nil
		}
		used := make([]bool, slots)
		if err := b.ForEach(func(k, v []byte) error {
			id, err := parseHostID(string(k), v)
			if err != nil {
				return err
			}
			if i, ok := slotOf(id); ok {
				used[i] = true
			}
			return nil
		}); err != nil {
			return err
		}
		for i, taken := range used {
			if !taken {
				got = first + uint32(i)*size
				return b.Put([]byte(podUID), []byte(strconv.FormatUint(uint64(got), 10)))
			}
		}
		return ErrNoUserNamespace
	})
	if errors.Is(err, ErrNoUserNamespace) {
		return 0, ErrNoUserNamespace
	}
	return got, err
}

// ReleaseUserNamespace frees pod's user namespace range, if it holds one;
// it reports whether it did.
func (s *Store) ReleaseUserNamespace(podUID string) (bool, error) {
	found := false
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUserns)
		if b.Get([]byte(podUID)) == nil {
			return errUnchanged
		}
		found = true
		return b.Delete([]byte(podUID))
	})
	return found, err
}

// UserNamespaces lists the first host ID of every pod holding a range.
func (s *Store) UserNamespaces() (map[string]uint32, error) {
	out := map[string]uint32{}
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUserns).ForEach(func(k, v []byte) error {
			id, err := parseHostID(string(k), v)
			out[string(k)] = id
			return err
		})
	})
	return out, err
}

func parseHostID(uid string, v []byte) (uint32, error) {
	id, err := strconv.ParseUint(string(v), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: user namespace of pod %s: %q is not a host ID", ErrCorrupt, uid, v)
	}
	return uint32(id), nil
}
