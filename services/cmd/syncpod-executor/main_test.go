package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/internal/boltfile/boltfiletest"
)

// A damaged database stops the executor with exit 1 and one log line that
// names the file and what to do: never a panic, never a fresh start that
// silently forgets every crash-loop back-off.
func TestADamagedDatabaseExitsOneNamingTheFile(t *testing.T) {
	boltfiletest.DamagedFiles(t, "executor.db", func(t *testing.T, dir, path string) {
		var out, errb bytes.Buffer
		code := run([]string{"--data-dir", dir, "--listen", "unix://" + filepath.Join(dir, "executor.sock"), "--metrics-listen=", "--cri-endpoint", "unix://" + filepath.Join(dir, "none.sock")},
			func(string) string { return "" }, &out, &errb)
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr %s", code, errb.String())
		}
		for _, want := range []string{"cannot open back-off store", path, "database file is corrupt", "mv " + path} {
			if !strings.Contains(errb.String(), want) {
				t.Errorf("stderr %q does not say %q", errb.String(), want)
			}
		}
	})
}

// A spacing outside 0..1s is refused before anything is opened.
func TestSandboxStartSpacingOutOfRangeExitsTwo(t *testing.T) {
	for _, v := range []string{"-1ms", "2s"} {
		dir := t.TempDir()
		var out, errb bytes.Buffer
		code := run([]string{"--data-dir", dir, "--listen", "unix://" + filepath.Join(dir, "executor.sock"), "--metrics-listen=", "--sandbox-start-spacing", v},
			func(string) string { return "" }, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "--sandbox-start-spacing") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming the flag", v, code, errb.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "executor.db")); !os.IsNotExist(err) {
			t.Errorf("%s: executor.db made (%v) though the flags were refused", v, err)
		}
	}
}

// An unknown cgroup driver is refused before anything is opened.
func TestUnknownCgroupDriverExitsTwo(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"--data-dir", dir, "--listen", "unix://" + filepath.Join(dir, "executor.sock"), "--metrics-listen=", "--cgroup-driver", "cgroupv3"},
		func(string) string { return "" }, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--cgroup-driver") {
		t.Errorf("exit %d, stderr %q; want 2 naming the flag", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "executor.db")); !os.IsNotExist(err) {
		t.Errorf("executor.db made (%v) though the flags were refused", err)
	}
}
