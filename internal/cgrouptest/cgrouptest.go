// Package cgrouptest gives a test a cgroup root of its own on the host's
// cgroup v1 hierarchies, removed when the test ends.
package cgrouptest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// V1Mount is where the host's cgroup v1 hierarchies are mounted.
const V1Mount = "/sys/fs/cgroup"

// RequireV1Memory skips the test unless the host has cgroup v1's memory
// and cpu hierarchies at V1Mount (v2 and the systemd driver are covered
// on fake trees by the cgroup packages' own tests).
func RequireV1Memory(t testing.TB) {
	t.Helper()
	for _, f := range []string{"memory/memory.usage_in_bytes", "cpu/cpu.shares"} {
		if _, err := os.Stat(filepath.Join(V1Mount, f)); err != nil {
			t.Skipf("needs cgroup v1 with the memory and cpu controllers at %s: %v", V1Mount, err)
		}
	}
}

// PrivateRoot is a cgroup root (a --cgroup-root) of the test's own, its
// name without a leading slash. When the test ends it is removed with
// everything under it, in every hierarchy: cleanups run last-registered
// first, so one registered before the test's pods runs after theirs. A
// cgroup still busy (a process the runtime has not yet reaped) is tried
// again for up to 10 s; one left behind after that fails the test.
func PrivateRoot(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("syncpod-test-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		hs, _ := os.ReadDir(V1Mount)
		for _, h := range hs {
			top := filepath.Join(V1Mount, h.Name(), name)
			var dirs []string
			_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			slices.Reverse(dirs)
			for _, d := range dirs {
				err := os.Remove(d)
				for end := time.Now().Add(10 * time.Second); errors.Is(err, syscall.EBUSY) && time.Now().Before(end); {
					time.Sleep(100 * time.Millisecond)
					err = os.Remove(d)
				}
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("test cgroup left behind: %v", err)
				}
			}
		}
	})
	return name
}
