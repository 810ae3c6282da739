package testsummary

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRecordAppendsOneLinePerCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.txt")
	t.Setenv(EnvFile, path)
	Record(t, "faults injected: %d, lost: %d", 6, 0)
	Record(t, "second")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "TestRecordAppendsOneLinePerCall: faults injected: 6, lost: 0\nTestRecordAppendsOneLinePerCall: second\n"
	if string(got) != want {
		t.Errorf("file = %q, want %q", got, want)
	}
}

func TestRecordWithoutAFileOnlyLogs(t *testing.T) {
	t.Setenv(EnvFile, "")
	dir := t.TempDir()
	t.Chdir(dir)
	Record(t, "nothing written")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("files written without %s: %v %v", EnvFile, entries, err)
	}
}
