package store

import (
	"context"
	"fmt"
	"path/filepath"
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
