package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func benchStore(b *testing.B) *Store {
	s, err := Open(Options{Path: filepath.Join(b.TempDir(), "planner.db"), Validate: fakeValidate})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkApplyUnchanged is the cost of re-applying an identical pod (no
// write), what a static manifest rescan or an idempotent client pays.
func BenchmarkApplyUnchanged(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	if _, _, err := s.Apply(ctx, pod("web", "img")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := s.Apply(ctx, pod("web", "img")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyUpdate is one committed (fsynced) spec change.
func BenchmarkApplyUpdate(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		if _, _, err := s.Apply(ctx, pod("web", fmt.Sprint("img:", i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen2000Pods is a planner start on a node of 2,000 pods with
// status and events: Open's page-range check and bbolt's consistency
// check (tx.Check) read every page once.
func BenchmarkOpen2000Pods(b *testing.B) {
	path := filepath.Join(b.TempDir(), "planner.db")
	s, err := Open(Options{Path: path, Validate: fakeValidate})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2000 {
		p := pod(fmt.Sprintf("pod-%04d", i), "busybox:1.36")
		p.Annotations = map[string]string{"note": strings.Repeat("x", 2000)} // about a status and events' worth
		if _, _, err := s.Apply(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	_ = s.Close()
	for b.Loop() {
		s, err := Open(Options{Path: path, Validate: fakeValidate})
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
	}
	if fi, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(fi.Size())/1e6, "file_MB")
	}
}

// BenchmarkSyncCommit is what a pod sync that applied a change set writes:
// "one" is CommitSync (one transaction), "three" the three separate writes
// the sync loop used to make. Each iteration changes the status so that
// every write commits.
func BenchmarkSyncCommit(b *testing.B) {
	for _, mode := range []string{"one", "three"} {
		b.Run(mode, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			p, _, err := s.Apply(ctx, pod("web", "img"))
			if err != nil {
				b.Fatal(err)
			}
			c := syncCommit()
			i := int32(0)
			for b.Loop() {
				i++
				c.Status.ContainerStatuses = []*syncpodv1.ContainerStatus{{Name: "app", RestartCount: i}}
				c.LastActions.Attempt = uint32(i)
				if mode == "one" {
					if _, err := s.CommitSync(ctx, p.GetUid(), c); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if err := s.AppendEvents(ctx, p.GetUid(), c.Events); err != nil {
					b.Fatal(err)
				}
				if err := s.SetLastActions(ctx, p.GetUid(), c.LastActions); err != nil {
					b.Fatal(err)
				}
				if _, err := s.UpdateStatus(ctx, p.GetUid(), c.Status); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
