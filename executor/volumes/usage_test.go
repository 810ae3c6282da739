package volumes

import (
	"os"
	"path/filepath"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestEmptyDirUsageCountsAllocatedBlocksOnce: what is written into an
// emptyDir is counted as du counts it (a hard link once, a sparse file by
// its allocated blocks); a volume never set up uses nothing.
func TestEmptyDirUsageCountsAllocatedBlocksOnce(t *testing.T) {
	m := newManager(t)
	pod := testPod(&syncpodv1.Volume{Name: "cache", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{SizeLimit: "1Mi"}}})
	paths, err := m.Setup(pod, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["cache"]
	empty, err := m.EmptyDirUsage(pod.GetUid(), "cache")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 2<<20)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "blob"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "sub", "blob"), filepath.Join(dir, "again")); err != nil {
		t.Fatal(err)
	}
	sparse, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sparse.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	_ = sparse.Close()
	got, err := m.EmptyDirUsage(pod.GetUid(), "cache")
	if err != nil {
		t.Fatal(err)
	}
	if got-empty < 2<<20 || got-empty > 3<<20 {
		t.Errorf("usage %d bytes (empty %d), want about 2 MiB: the blob once, the sparse file's holes not", got, empty)
	}
	if n, err := m.EmptyDirUsage(pod.GetUid(), "never-set-up"); err != nil || n != 0 {
		t.Errorf("a volume never set up: %d, %v", n, err)
	}
	if n, err := m.EmptyDirUsage("other-uid", "cache"); err != nil || n != 0 {
		t.Errorf("an unknown pod: %d, %v", n, err)
	}
}
