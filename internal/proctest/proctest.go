// Package proctest holds what tests ask of host processes they start
// (crisim's containers are host processes): whether one has ended, and
// waiting for a process to report its PIDs or to be gone. Polling with a
// deadline; for tests only.
package proctest

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Gone says whether pid no longer runs: absent, or a zombie nobody
// reaped yet.
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state (field 3) follows the command name, which is in
	// parentheses and may hold spaces.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// WaitGone waits up to timeout for every pid to be Gone, and fails t
// with "process PID still runs WHEN" for the first that is not.
func WaitGone(t testing.TB, timeout time.Duration, when string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for !Gone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still runs %s", pid, when)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// ReadPIDs waits up to timeout for the file at path, which a process
// under test writes whole (written aside, then renamed), and returns the
// PIDs it lists, separated by white space (at least one).
func ReadPIDs(t testing.TB, path string, timeout time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	b, err := os.ReadFile(path)
	for ; err != nil; b, err = os.ReadFile(path) {
		if time.Now().After(deadline) {
			t.Fatalf("no PIDs in %s after %s: %v", path, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q is not a PID", path, f)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("%s lists no PIDs", path)
	}
	return pids
}

// Buffer is a bytes.Buffer that a process's (or goroutine's) output may
// be written to while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
