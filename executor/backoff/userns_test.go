package backoff

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestUserNamespacesAreDistinctAndOutliveARestart: every pod gets its own
// slot, the same one when it asks again, also after the store is closed
// and opened again; a released slot is handed out again; a full range is
// refused with the kubelet's message.
func TestUserNamespacesAreDistinctAndOutliveARestart(t *testing.T) {
	const first, size, slots = 65536, 65536, 3
	path := filepath.Join(t.TempDir(), "executor.db")
	s, err := Open(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := func(s *Store, uid string) uint32 {
		t.Helper()
		id, err := s.AllocateUserNamespace(uid, first, size, slots)
		if err != nil {
			t.Fatalf("allocate for %s: %v", uid, err)
		}
		return id
	}
	a, b := alloc(s, "a"), alloc(s, "b")
	if a != 65536 || b != 2*65536 {
		t.Errorf("a from %d, b from %d; want the lowest free slots 65536 and 131072", a, b)
	}
	if again := alloc(s, "a"); again != a {
		t.Errorf("a asked again: %d, want %d", again, a)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, path, Config{})
	if got := alloc(s, "b"); got != b {
		t.Errorf("b after a restart: %d, want %d", got, b)
	}
	if c := alloc(s, "c"); c != 3*65536 {
		t.Errorf("c from %d after a restart, want 196608 (a's and b's slots are still taken)", c)
	}
	if _, err := s.AllocateUserNamespace("d", first, size, slots); !errors.Is(err, ErrNoUserNamespace) ||
		err.Error() != "could not find an empty slot to allocate a user namespace" {
		t.Errorf("d with every slot taken: %v", err)
	}
	if freed, err := s.ReleaseUserNamespace("a"); err != nil || !freed {
		t.Fatalf("release a = %v, %v", freed, err)
	}
	if freed, err := s.ReleaseUserNamespace("a"); err != nil || freed {
		t.Errorf("release a twice = %v, %v; want nothing to free", freed, err)
	}
	if d := alloc(s, "d"); d != a {
		t.Errorf("d from %d, want a's freed slot %d", d, a)
	}
	all, err := s.UserNamespaces()
	if err != nil || len(all) != 3 || all["b"] != b || all["d"] != a {
		t.Errorf("UserNamespaces = %v, %v", all, err)
	}
	if _, err := s.AllocateUserNamespace("b", 10*65536, size, slots); err == nil {
		t.Error("b holding a range outside a reconfigured node range was handed it")
	}
}
