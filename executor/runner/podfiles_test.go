package runner

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestTerminationLogIsOneFileInThePodDirectoryPerInstance: every
// container instance gets a fresh, empty, world-writable file (any
// container user must be able to write its message), directly in the
// pod's directory: no directory is made for it besides the pod's own.
func TestTerminationLogIsOneFileInThePodDirectoryPerInstance(t *testing.T) {
	root := t.TempDir()
	r := &Runner{podRoot: root}
	pod := testPod(nil, ctr("web"))
	first, err := r.newTerminationLog(pod, "web")
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.newTerminationLog(pod, "web")
	if err != nil {
		t.Fatal(err)
	}
	if first == second {
		t.Fatalf("two instances share the termination log %s", first)
	}
	podDir := filepath.Join(root, pod.GetUid())
	name := regexp.MustCompile(`^web\.[0-9a-f]{16}\.termination-log$`)
	for _, p := range []string{first, second} {
		if filepath.Dir(p) != podDir || !name.MatchString(filepath.Base(p)) {
			t.Errorf("termination log %s, want %s/web.<16 hex digits>.termination-log", p, podDir)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o666 || fi.Size() != 0 || !fi.Mode().IsRegular() {
			t.Errorf("%s: mode %v, size %d; want an empty regular file, mode 0666", p, fi.Mode(), fi.Size())
		}
	}
	entries, err := os.ReadDir(podDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("directory %s made in the pod directory", e.Name())
		}
	}
	if len(entries) != 2 {
		t.Errorf("pod directory holds %d entries, want the 2 termination logs", len(entries))
	}
}
