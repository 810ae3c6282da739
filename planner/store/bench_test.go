package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
