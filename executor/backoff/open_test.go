package backoff

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/syncpod/syncpod/internal/boltfile/boltfiletest"
)

// The guarded open itself (corrupt pages, truncation, empty files, lock
// holders, atomic create, host faults) is tested once, in
// internal/boltfile. These tests check what is the executor's own: its
// advice in the errors (wrapped in ErrStore), records that do not decode,
// its writes on a full disk.

// whatLosingTheFileCosts is said in every ErrCorrupt the store returns.
const whatLosingTheFileCosts = "only forgets the crash-loop back-off delays"

// filledStore writes n back-off entries into a fresh file, closes it and
// returns its path.
func filledStore(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "executor.db")
	c := newClock()
	s, err := Open(path, Config{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		k := Key{PodUID: fmt.Sprintf("uid-%03d", i), ContainerName: strings.Repeat("c", 60), SpecHash: "h"}
		if _, err := s.Next(k, PodRef{Name: strings.Repeat("p", 200), Namespace: "ns"}, c.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// expectOpenError opens path and requires an ErrStore of class want whose
// message names the file and says every hint; nothing may panic.
func expectOpenError(t *testing.T, path string, want error, hints ...string) {
	t.Helper()
	boltfiletest.OpenRefused(t, func() (*Store, error) { return Open(path, Config{OpenTimeout: 100 * time.Millisecond}) },
		path, []error{ErrStore, want}, hints...)
}

func TestOpenOfADamagedFileSaysWhatTheExecutorLoses(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "executor.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		expectOpenError(t, path, ErrCorrupt, "this executor never leaves an empty file behind",
			"stop the executor", "mv "+path+" "+path+".corrupt", whatLosingTheFileCosts)
	})
	t.Run("truncated", func(t *testing.T) {
		path := filledStore(t, 3)
		if err := os.Truncate(path, 100); err != nil {
			t.Fatal(err)
		}
		expectOpenError(t, path, ErrCorrupt, "mv "+path+" "+path+".corrupt", whatLosingTheFileCosts)
	})
}

func TestOpenOfALockedFileNamesTheExecutor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "executor.db")
	openT(t, path, Config{})
	expectOpenError(t, path, ErrLocked, "this process", "100ms", "another executor", "--data-dir")
}

func TestOpenOfARecordThatDoesNotDecodeIsCorrupt(t *testing.T) {
	path := filledStore(t, 3)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBackoff).Bucket([]byte("uid-001")).Put([]byte(strings.Repeat("c", 60)+"\x00h"), []byte("{not json"))
	})
	_ = db.Close()
	expectOpenError(t, path, ErrCorrupt, "uid-001", "mv "+path, whatLosingTheFileCosts)
}

// On a full disk (a private tmpfs in a child process, see boltfiletest)
// Next is refused with an ErrStore naming the file, the committed entry
// stays readable and a restart on the still-full disk opens the file.
func TestNextOnAFullDiskIsAClearErrorAndLosesNothing(t *testing.T) {
	boltfiletest.Faults(t, "256k", []string{"full disk"}, func(t *testing.T, dir, _ string) {
		path := filepath.Join(dir, "executor.db")
		c := newClock()
		s, err := Open(path, Config{Clock: c})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Next(key, PodRef{}, c.Now()); err != nil {
			t.Fatal(err)
		}
		boltfiletest.Fill(t, filepath.Join(dir, "filler"))
		var failed error
		for i := 0; i < 200 && failed == nil; i++ {
			k := Key{PodUID: fmt.Sprintf("uid-%d", i), ContainerName: strings.Repeat("c", 200), SpecHash: "h"}
			_, failed = s.Next(k, PodRef{Name: strings.Repeat("p", 250)}, c.Now())
		}
		boltfiletest.MustSay(t, failed, syscall.ENOSPC, path)
		if !errors.Is(failed, ErrStore) {
			t.Errorf("%v is not an ErrStore", failed)
		}
		if e, ok, err := s.Get(key); err != nil || !ok || e.Delay != DefaultInitial {
			t.Fatalf("after a failed write the committed entry reads %v, %v, %v", e, ok, err)
		}
		_ = s.Close()
		// Still full: a restart rewrites only pages the file already
		// has, so it opens, with the committed entry (and its first GC,
		// which reads every entry, passes).
		s, err = Open(path, Config{Clock: c})
		if err != nil {
			t.Fatalf("reopen on a full disk: %v", err)
		}
		if _, ok, err := s.Get(key); !ok || err != nil {
			t.Fatalf("after reopening on a full disk the committed entry is gone: %v", err)
		}
		_ = s.Close()
		fmt.Printf("full disk: refused with %v\n", failed)
	})
}
