package boltfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/syncpod/syncpod/internal/boltfile"
	"github.com/syncpod/syncpod/internal/boltfile/boltfiletest"
)

// The storage faults a host causes (a read-only mount, a directory the
// service cannot write, a full disk) play on a private tmpfs in a child
// process in its own mount namespace, so nothing is mounted on the host.
func TestHostStorageFaultsAreClearErrors(t *testing.T) {
	scenarios := []string{"read-only mount", "read-only mount, existing file", "unwritable directory", "full disk", "full disk, new file"}
	boltfiletest.Faults(t, "512k", scenarios, func(t *testing.T, dir, scenario string) {
		path := filepath.Join(dir, "test.db")
		switch scenario {
		case "read-only mount":
			boltfiletest.RemountReadOnly(t, dir)
			_, err := boltfile.Open(path, opts)
			boltfiletest.MustSay(t, err, syscall.EROFS, path, "read-only", "--data-dir")
			if errors.Is(err, boltfile.ErrCorrupt) {
				t.Errorf("a read-only mount is classed as a corrupt file: %v", err)
			}
		case "read-only mount, existing file":
			db, err := boltfile.Open(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
			boltfiletest.RemountReadOnly(t, dir)
			_, err = boltfile.Open(path, opts)
			boltfiletest.MustSay(t, err, syscall.EROFS, path, "read-only")
		case "unwritable directory":
			if os.Geteuid() == 0 {
				// Root writes anywhere: act as nobody, keeping root as the
				// saved uid to come back for the clean-up.
				if err := syscall.Setresuid(65534, 65534, 0); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = syscall.Setresuid(0, 0, 0) }()
			} else if err := os.Chmod(dir, 0o500); err != nil {
				t.Fatal(err)
			}
			_, err := boltfile.Open(path, opts)
			boltfiletest.MustSay(t, err, syscall.EACCES, path, "the tester (uid", "must be able to read and write")
		case "full disk":
			playFullDisk(t, dir, path)
		case "full disk, new file":
			boltfiletest.Fill(t, filepath.Join(dir, "filler"))
			_, err := boltfile.Open(path, opts)
			boltfiletest.MustSay(t, err, syscall.ENOSPC, path, "disk is full")
			// The create failed as a whole: no empty file (which the next
			// start would rightly call corrupt) and no temporary one.
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Fatalf("a failed create left %v behind", entries)
			}
		default:
			t.Fatalf("unknown scenario %q", scenario)
		}
	})
}

// playFullDisk fills the disk under an open file: writes are refused,
// nothing committed is lost, a restart on the still-full disk opens the
// file, and writes work again once space comes back.
func playFullDisk(t *testing.T, dir, path string) {
	db, err := boltfile.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	put := func(db *bolt.DB, i int, size int) error {
		return db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucketItems)
			if err != nil {
				return err
			}
			return b.Put(fmt.Appendf(nil, "item-%04d", i), []byte(strings.Repeat("y", size)))
		})
	}
	acked := 0
	for ; acked < 5; acked++ {
		if err := put(db, acked, 100); err != nil {
			t.Fatal(err)
		}
	}
	filler := filepath.Join(dir, "filler")
	boltfiletest.Fill(t, filler)
	var failed error
	for i := 0; i < 200 && failed == nil; i++ {
		if failed = put(db, 1000+i, 8000); failed == nil {
			acked++
		}
	}
	boltfiletest.MustSay(t, failed, syscall.ENOSPC)
	if n := countItems(t, db); n != acked {
		t.Fatalf("after a refused write: %d items readable, want the %d committed", n, acked)
	}
	_ = db.Close()
	// Still full: a restart rewrites only pages the file already has, so
	// it opens, with everything committed.
	db, err = boltfile.Open(path, opts)
	if err != nil {
		t.Fatalf("reopen on a full disk: %v", err)
	}
	if n := countItems(t, db); n != acked {
		t.Fatalf("after reopening on a full disk: %d items, want the %d committed", n, acked)
	}
	// Space comes back: writes work again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := put(db, 5000, 100); err != nil {
		t.Fatalf("write after space was freed: %v", err)
	}
	acked++
	_ = db.Close()
	db, err = boltfile.Open(path, opts)
	if err != nil {
		t.Fatalf("reopen after a full disk: %v", err)
	}
	defer db.Close()
	if n := countItems(t, db); n != acked {
		t.Fatalf("after reopening: %d items, want the %d committed", n, acked)
	}
	fmt.Printf("full disk: %d writes committed, refused with %v\n", acked, failed)
}
