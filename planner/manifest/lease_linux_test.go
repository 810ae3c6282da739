//go:build linux

package manifest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// What readManifest relies on, in the window where it holds a read lease:
// a writer's open waits until the lease is let go (and then goes ahead),
// and the SIGIO the kernel sends the holder to break it does no harm to a
// Go process that does not ask for it.
func TestALeaseHolderOutlivesTheBreakAndTheWriterWaits(t *testing.T) {
	dir := t.TempDir()
	leasesOrSkip(t, dir)
	path := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(path, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { _, lerr = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_RDLCK) }); err != nil || lerr != nil {
		t.Fatalf("lease: %v %v", err, lerr)
	}
	writer := exec.Command("sh", "-c", `printf b >> "$1"`, "sh", path)
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- writer.Wait() }()
	// The writer is held while the lease is (up to the kernel's
	// lease-break time, 45 s by default); this process gets SIGIO.
	select {
	case err := <-done:
		t.Fatalf("the writer went ahead while the lease was held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the writer still waits after the lease was let go")
	}
	if b, _ := os.ReadFile(path); string(b) != "ab" {
		t.Errorf("file = %q, want the writer's append", b)
	}
}
