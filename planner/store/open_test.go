package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syncpod/syncpod/internal/boltfile/boltfiletest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// The guarded open itself (corrupt pages, truncation, empty files, lock
// holders, atomic create, host faults) is tested once, in
// internal/boltfile. These tests check what is the planner's own: its
// advice in the errors, its schema, its writes on a full disk.

// whatLosingTheFileCosts is said in every ErrCorrupt the store returns.
const whatLosingTheFileCosts = "forget every desired pod"

// expectOpenError opens path and requires an error of class want whose
// message names the file and holds every hint; nothing may panic.
func expectOpenError(t *testing.T, path string, want error, hints ...string) {
	t.Helper()
	boltfiletest.OpenRefused(t, func() (*Store, error) {
		return Open(Options{Path: path, Validate: fakeValidate, OpenTimeout: 100 * time.Millisecond})
	}, path, []error{want}, hints...)
}

func TestOpenOfADamagedFileSaysWhatThePlannerLoses(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "planner.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		expectOpenError(t, path, ErrCorrupt, "this planner never leaves an empty file behind",
			"stop the planner", "mv "+path+" "+path+".corrupt", "backup", whatLosingTheFileCosts)
	})
	t.Run("truncated", func(t *testing.T) {
		_, _, path := openTest(t, nil) // closed by the test's clean-up, before the temp dir goes
		cut := filepath.Join(t.TempDir(), "planner.db")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cut, raw[:100], 0o600); err != nil {
			t.Fatal(err)
		}
		expectOpenError(t, cut, ErrCorrupt, "mv "+cut+" "+cut+".corrupt", whatLosingTheFileCosts)
	})
}

func TestOpenOfALockedFileNamesThePlanner(t *testing.T) {
	_, _, path := openTest(t, nil)
	expectOpenError(t, path, ErrLocked, "this process", "100ms", "another planner", "--data-dir")
}

func TestOpenOfAnUnreadableSchemaVersionIsCorrupt(t *testing.T) {
	path := fileWithSchemaVersion(t, []byte{0, 0, 0, 0, 0, 0, 0, 1})
	expectOpenError(t, path, ErrCorrupt, "schema_version")
}

// On a full disk (a private tmpfs in a child process, see boltfiletest)
// Apply is refused with an error naming the file, nothing acknowledged is
// lost and nothing refused is stored.
func TestApplyOnAFullDiskIsAClearErrorAndLosesNothing(t *testing.T) {
	boltfiletest.Faults(t, "512k", []string{"full disk"}, func(t *testing.T, dir, _ string) {
		path := filepath.Join(dir, "planner.db")
		ctx := context.Background()
		open := func() (*Store, error) { return Open(Options{Path: path, Validate: fakeValidate}) }
		s, err := open()
		if err != nil {
			t.Fatal(err)
		}
		acked := 0
		for i := 0; i < 5; i++ {
			if _, _, err := s.Apply(ctx, pod(fmt.Sprintf("before-%d", i), "busybox:1.36")); err != nil {
				t.Fatal(err)
			}
			acked++
		}
		filler := filepath.Join(dir, "filler")
		boltfiletest.Fill(t, filler)
		var failed error
		for i := 0; i < 50 && failed == nil; i++ {
			p := pod(fmt.Sprintf("full-%d", i), "busybox:1.36")
			p.Annotations = map[string]string{"big": strings.Repeat("y", 8000)}
			if _, _, err := s.Apply(ctx, p); err != nil {
				failed = err
			} else {
				acked++
			}
		}
		boltfiletest.MustSay(t, failed, syscall.ENOSPC, path)
		if _, err := s.Get(ctx, &plannerv1.PodRef{Name: "before-0"}); err != nil {
			t.Fatalf("after a failed write, an acknowledged pod cannot be read: %v", err)
		}
		// Space comes back: writes work again and nothing acknowledged
		// was lost, nothing refused was stored.
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Apply(ctx, pod("after", "busybox:1.36")); err != nil {
			t.Fatalf("Apply after space was freed: %v", err)
		}
		acked++
		_ = s.Close()
		s, err = open()
		if err != nil {
			t.Fatalf("reopen after a full disk: %v", err)
		}
		recs, err := s.List(ctx, Filter{})
		_ = s.Close()
		if err != nil || len(recs) != acked {
			t.Fatalf("after reopening: %d pods (%v), want the %d acknowledged", len(recs), err, acked)
		}
		fmt.Printf("full disk: %d writes acknowledged, refused with %v\n", acked, failed)
	})
}
