package cgrouptest

import (
	"os"
	"path/filepath"
	"testing"
)

// A private root made in two hierarchies, with a child, is gone after the
// test's cleanups.
func TestPrivateRootIsRemoved(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups")
	}
	RequireV1Memory(t)
	var dirs []string
	t.Run("inner", func(t *testing.T) {
		name := PrivateRoot(t)
		for _, h := range []string{"memory", "cpu"} {
			d := filepath.Join(V1Mount, h, name, "kubepods", "besteffort")
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, filepath.Join(V1Mount, h, name))
		}
	})
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", d, err)
		}
	}
	if len(dirs) != 2 {
		t.Fatalf("made %d roots, want 2", len(dirs))
	}
}
