package e2e

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// unmountAtCleanup unmounts, at cleanup, every mount below dir: the tmpfs
// an executor mounts for the secret and projected volumes of pods that
// still run when a test stops its node (as a stopped kubelet, it leaves
// running pods as they are). Registered right after dir is made, it runs
// after the node's processes are stopped and before dir is removed, so
// the removal finds plain directories and the host keeps no mount.
func unmountAtCleanup(t *testing.T, dir string) {
	t.Helper()
	t.Cleanup(func() {
		points, err := mountsUnder(dir)
		if err != nil {
			t.Errorf("reading the mount table: %v", err)
			return
		}
		for _, p := range points {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", p, err)
			}
		}
	})
}

// mountsUnder lists the mount points strictly below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// The mount point is the fifth field, with space, tab, newline
		// and backslash escaped as octal.
		p := unescapeMountinfo(f[4])
		if strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, nil
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, ok := octal(s[i+1 : i+4]); ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal(s string) (byte, bool) {
	var v int
	for _, c := range s {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v*8 + int(c-'0')
	}
	return byte(v), v < 256
}

// TestUnmountAtCleanupLeavesNoMount: a tmpfs left below a test's directory
// (a name with a space included) is gone when the test's cleanups have
// run, and the directory with it.
func TestUnmountAtCleanupLeavesNoMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	var dir string
	t.Run("node", func(t *testing.T) {
		dir = t.TempDir()
		unmountAtCleanup(t, dir)
		for _, p := range []string{dir + "/pods/a/volumes/projected/kube api", dir + "/pods/a/volumes/secret/s"} {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", p, "tmpfs", 0, "size=1m"); err != nil {
				t.Fatal(err)
			}
		}
		if points, err := mountsUnder(dir); err != nil || len(points) != 2 {
			t.Fatalf("mountsUnder = %q, %v; want the two tmpfs", points, err)
		}
	})
	if points, err := mountsUnder(dir); err != nil || len(points) != 0 {
		t.Errorf("after cleanup, mounts left: %q (%v)", points, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the test's directory is still there: %v", err)
	}
}
