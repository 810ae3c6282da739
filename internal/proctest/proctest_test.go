package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestGoneOnlyOnceTheProcessHasEnded(t *testing.T) {
	if Gone(os.Getpid()) {
		t.Fatal("Gone(this test) = true")
	}
	cmd := exec.Command("sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if Gone(pid) {
		t.Fatal("Gone(a running sleep) = true")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Killed but not reaped: a zombie counts as gone.
	WaitGone(t, 30*time.Second, "after SIGKILL", pid)
	_ = cmd.Wait()
	if !Gone(pid) {
		t.Fatal("Gone(a reaped process) = false")
	}
}

func TestReadPIDsWaitsForTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pids")
	go func() { // the file comes whenever it comes: ReadPIDs waits
		_ = os.WriteFile(path+".tmp", []byte("12 345\n"), 0o644)
		_ = os.Rename(path+".tmp", path)
	}()
	got := ReadPIDs(t, path, 30*time.Second)
	if len(got) != 2 || got[0] != 12 || got[1] != 345 {
		t.Fatalf("ReadPIDs = %v, want [12 345]", got)
	}
}
