package boltfiletest

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/syncpod/syncpod/internal/testsummary"
)

// childEnv carries the scenario a child process plays.
const childEnv = "SYNCPOD_BOLTFILE_FAULT_CHILD"

// SetupFailure starts the message a child prints when it cannot mount its
// tmpfs; the parent then skips (loudly) where that is allowed.
const SetupFailure = "cannot set up a private tmpfs"

// Faults runs play once per scenario, each in a child process (this test
// binary again, running only the calling top-level test) in a private
// mount namespace, with dir a fresh tmpfs of the given size ("512k")
// mounted there. Faults must be called from a top-level test and be the
// first thing it does; in the child it plays the scenario and returns.
//
// Without root the child gets a user namespace that keeps this uid (so
// file permissions still apply) with the right to mount. Where no such
// namespace can be made the subtests skip with a loud reason, except as
// root or in CI (CI=true), where they fail.
func Faults(t *testing.T, size string, scenarios []string, play func(t *testing.T, dir, scenario string)) {
	t.Helper()
	if scenario := os.Getenv(childEnv); scenario != "" {
		playInChild(t, size, scenario, play)
		return
	}
	top := t.Name()
	injected := 0
	for _, scenario := range scenarios {
		t.Run(scenario, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^"+top+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+scenario)
			cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
			if os.Geteuid() != 0 {
				const capSysAdmin = 21
				cmd.SysProcAttr = &syscall.SysProcAttr{
					Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
					UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}},
					GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}},
					AmbientCaps: []uintptr{capSysAdmin},
				}
			}
			out, err := cmd.CombinedOutput()
			canSkip := os.Geteuid() != 0 && os.Getenv("CI") != "true"
			if err != nil && canSkip && strings.Contains(string(out), SetupFailure) {
				t.Skipf("SKIPPED LOUDLY: no private mount namespace for a tmpfs here (run as root or in CI to test storage faults):\n%s", out)
			}
			if err != nil {
				var ee *exec.Error
				if errors.As(err, &ee) || (canSkip && errors.Is(err, syscall.EPERM)) {
					t.Skipf("SKIPPED LOUDLY: cannot start a child in its own mount namespace: %v", err)
				}
				t.Fatalf("child failed: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "--- PASS") {
				t.Fatalf("child ran no scenario:\n%s", out)
			}
			t.Logf("child:\n%s", out)
			injected++
		})
	}
	testsummary.Record(t, "storage faults injected: %d of %d (%s), each a clear error naming the file, no panic", injected, len(scenarios), strings.Join(scenarios, "; "))
}

// playInChild mounts the tmpfs and plays one scenario.
func playInChild(t *testing.T, size, scenario string, play func(t *testing.T, dir, scenario string)) {
	t.Helper()
	dir := t.TempDir()
	// Belt and braces: nothing mounted here may propagate to the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf(SetupFailure+": make / private: %v", err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		t.Fatalf(SetupFailure+": %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	play(t, dir, scenario)
}

// RemountReadOnly makes the tmpfs at dir read-only.
func RemountReadOnly(t *testing.T, dir string) {
	t.Helper()
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
}

// Fill writes path until the file system is full.
func Fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// MustSay requires err to be of class want (errors.Is) and its message to
// hold every hint.
func MustSay(t *testing.T, err error, want error, hints ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Errorf("error %q is not %v", err, want)
	}
	for _, h := range hints {
		if !strings.Contains(err.Error(), h) {
			t.Errorf("error %q does not say %q", err, h)
		}
	}
}

// OpenRefused requires open, a store's Open of the file at path, to fail
// with an error of every class in wants whose message names path and
// holds every hint; a store that opens is closed and fails t.
func OpenRefused[S io.Closer](t *testing.T, open func() (S, error), path string, wants []error, hints ...string) {
	t.Helper()
	s, err := open()
	if err == nil {
		_ = s.Close()
		t.Fatalf("Open succeeded, want %v", wants)
	}
	for _, want := range wants {
		MustSay(t, err, want, append([]string{path}, hints...)...)
	}
}
