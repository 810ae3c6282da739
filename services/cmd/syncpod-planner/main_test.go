package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/internal/boltfile/boltfiletest"
)

// A damaged database stops the planner with exit 1 and one log line that
// names the file and what to do: never a panic, never a fresh start that
// would forget every desired pod.
func TestADamagedDatabaseExitsOneNamingTheFile(t *testing.T) {
	boltfiletest.DamagedFiles(t, "planner.db", func(t *testing.T, dir, path string) {
		sock := filepath.Join(dir, "planner.sock")
		var out, errb bytes.Buffer
		code := run([]string{"--data-dir", dir, "--listen", "unix://" + sock, "--metrics-listen="},
			func(string) string { return "" }, &out, &errb)
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr %s", code, errb.String())
		}
		for _, want := range []string{"cannot open the pod store", path, "database file is corrupt", "mv " + path} {
			if !strings.Contains(errb.String(), want) {
				t.Errorf("stderr %q does not say %q", errb.String(), want)
			}
		}
		if _, err := os.Stat(sock); err == nil {
			t.Errorf("a planner that cannot open its database left its socket %s behind", sock)
		}
	})
}

// bad eviction flags exit 2 naming every problem, before anything
// is opened or listened on.
func TestBadEvictionFlagsExitTwo(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"--data-dir", dir, "--listen", "unix://" + filepath.Join(dir, "p.sock"), "--metrics-listen=",
		"--eviction-hard", "memory.free<1Gi", "--eviction-soft", "nodefs.available<20%"},
		func(string) string { return "" }, &out, &errb)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", code, errb.String())
	}
	for _, want := range []string{"bad eviction flags", `unknown signal \"memory.free\"`, "--eviction-soft nodefs.available: a soft threshold needs a grace period"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q does not say %q", errb.String(), want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "planner.db")); err == nil {
		t.Errorf("the database was created despite bad flags")
	}
}

// A bound of no syncs at all exits 2 naming the flag, before the database
// is opened.
func TestNoConcurrentSyncsExitsTwo(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"--data-dir", dir, "--listen", "unix://" + filepath.Join(dir, "p.sock"), "--metrics-listen=",
		"--max-concurrent-syncs", "0"}, func(string) string { return "" }, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--max-concurrent-syncs") {
		t.Fatalf("exit %d, stderr %s; want 2 naming --max-concurrent-syncs", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "planner.db")); err == nil {
		t.Errorf("the database was created despite a bad flag")
	}
}

// an --eviction-memory-cgroup that is not a cgroup with memory
// accounting exits 2 naming it, before the database is opened.
func TestAMemoryCgroupWithoutMemoryExitsTwo(t *testing.T) {
	dir := t.TempDir()
	notCgroup := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"--data-dir", dir, "--listen", "unix://" + filepath.Join(dir, "p.sock"), "--metrics-listen=",
		"--eviction-memory-cgroup", notCgroup}, func(string) string { return "" }, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "bad --eviction-memory-cgroup") || !strings.Contains(errb.String(), notCgroup) {
		t.Fatalf("exit %d, stderr %s; want 2 naming --eviction-memory-cgroup and %s", code, errb.String(), notCgroup)
	}
	if _, err := os.Stat(filepath.Join(dir, "planner.db")); err == nil {
		t.Errorf("the database was created despite a bad flag")
	}
}
