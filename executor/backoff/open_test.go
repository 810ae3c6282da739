package backoff

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// filledStore writes n back-off entries into a fresh file, closes it and
// returns its path.
func filledStore(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "executor.db")
	c := newClock()
	s, err := Open(path, Config{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		k := Key{PodUID: fmt.Sprintf("uid-%03d", i), ContainerName: strings.Repeat("c", 60), SpecHash: "h"}
		if _, err := s.Next(k, PodRef{Name: strings.Repeat("p", 200), Namespace: "ns"}, c.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// copyFile copies the test file src to a fresh path.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "executor.db")
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pageLayout returns the page size and the ids of the pages by type.
func pageLayout(t *testing.T, path string) (int, map[string][]int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pages := map[string][]int{}
	_ = db.View(func(tx *bolt.Tx) error {
		for id := 0; ; id++ {
			pi, err := tx.Page(id)
			if err != nil {
				t.Fatal(err)
			}
			if pi == nil {
				return nil
			}
			pages[pi.Type] = append(pages[pi.Type], id)
		}
	})
	return db.Info().PageSize, pages
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// expectOpenError opens path and requires an ErrStore of class want whose
// message names the file and says every hint; nothing may panic.
func expectOpenError(t *testing.T, path string, want error, hints ...string) {
	t.Helper()
	s, err := Open(path, Config{OpenTimeout: 100 * time.Millisecond})
	if err == nil {
		_ = s.Close()
		t.Fatalf("Open succeeded, want %v", want)
	}
	if !errors.Is(err, want) || !errors.Is(err, ErrStore) {
		t.Fatalf("Open = %v, want %v wrapped in %v", err, want, ErrStore)
	}
	for _, h := range append([]string{path}, hints...) {
		if !strings.Contains(err.Error(), h) {
			t.Errorf("error %q does not say %q", err, h)
		}
	}
}

func TestOpenOfAnEmptyFileIsCorruptNotAFreshStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "executor.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	expectOpenError(t, path, ErrCorrupt, "empty (0 bytes)", "mv "+path+" "+path+".corrupt")
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("Open changed the empty file (%v, %v)", fi, err)
	}
}

func TestOpenCreatesTheFileCompleteOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "executor.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "executor.db" {
		t.Fatalf("directory holds %v, want only executor.db (no temporary file left behind)", entries)
	}
}

func TestOpenOfALockedFileSaysWhoHoldsIt(t *testing.T) {
	t.Run("this process", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "executor.db")
		openT(t, path, Config{})
		expectOpenError(t, path, ErrLocked, "this process", "100ms", "--data-dir")
	})
	t.Run("another process", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "executor.db")
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldStore$")
		cmd.Env = append(os.Environ(), "SYNCPOD_BACKOFF_HOLD="+path)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || strings.TrimSpace(line) != "holding" {
			t.Fatalf("child did not open the store: %q, %v", line, err)
		}
		expectOpenError(t, path, ErrLocked, fmt.Sprintf("process %d holds it", cmd.Process.Pid), "another executor")
	})
}

// TestHelperHoldStore is not a test: TestOpenOfALockedFileSaysWhoHoldsIt
// runs it in a child process to hold the file.
func TestHelperHoldStore(t *testing.T) {
	path := os.Getenv("SYNCPOD_BACKOFF_HOLD")
	if path == "" {
		t.Skip("helper process for TestOpenOfALockedFileSaysWhoHoldsIt")
	}
	s, err := Open(path, Config{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = s.Close()
	os.Exit(0)
}

func TestOpenOfATruncatedFileIsCorrupt(t *testing.T) {
	path := filledStore(t, 300)
	pageSize, pages := pageLayout(t, path)
	used := 0
	for _, ids := range pages {
		used += len(ids)
	}
	for _, size := range []int{100, pageSize, 2 * pageSize, used * pageSize / 2, (used - 1) * pageSize} {
		t.Run(fmt.Sprintf("%d bytes of %d used", size, used*pageSize), func(t *testing.T) {
			p := copyFile(t, path)
			if err := os.Truncate(p, int64(size)); err != nil {
				t.Fatal(err)
			}
			expectOpenError(t, p, ErrCorrupt, "mv "+p, "back-off")
			expectOpenError(t, p, ErrCorrupt) // the failed Open let go of the lock
		})
	}
}

func TestOpenOfACorruptFileIsAClearErrorNotAPanic(t *testing.T) {
	path := filledStore(t, 300)
	pageSize, pages := pageLayout(t, path)
	if len(pages["leaf"]) == 0 || len(pages["branch"]) == 0 || len(pages["freelist"]) == 0 {
		t.Fatalf("test file lacks a leaf, branch or freelist page: %v", pages)
	}
	header := func(id, off int, b ...byte) func(string) {
		return func(p string) { writeAt(t, p, int64(id*pageSize+off), b) }
	}
	leaf, branch, freelist := pages["leaf"][len(pages["leaf"])/2], pages["branch"][0], pages["freelist"][0]
	var wrongID [8]byte
	binary.LittleEndian.PutUint64(wrongID[:], uint64(leaf)+1)
	for _, tc := range []struct {
		name    string
		corrupt func(string)
	}{
		{"freelist page flagged as a leaf", header(freelist, 8, 0x02, 0)},
		{"leaf page with another page's id", header(leaf, 0, wrongID[:]...)},
		{"branch page flagged as a leaf", header(branch, 8, 0x02, 0)},
		{"leaf page full of garbage", header(leaf, 16, []byte(strings.Repeat("\xde\xad\xbe\xef", pageSize/4-4))...)},
		{"both meta pages overwritten", func(p string) {
			header(0, 16, []byte(strings.Repeat("\xff", 64))...)(p)
			header(1, 16, []byte(strings.Repeat("\xff", 64))...)(p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := copyFile(t, path)
			tc.corrupt(p)
			expectOpenError(t, p, ErrCorrupt, "mv "+p+" "+p+".corrupt")
			expectOpenError(t, p, ErrCorrupt)
		})
	}
}

func TestOpenOfARecordThatDoesNotDecodeIsCorrupt(t *testing.T) {
	path := filledStore(t, 3)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBackoff).Bucket([]byte("uid-001")).Put([]byte(strings.Repeat("c", 60)+"\x00h"), []byte("{not json"))
	})
	_ = db.Close()
	expectOpenError(t, path, ErrCorrupt, "uid-001", "mv "+path)
}

// Host faults run on a private tmpfs in a child process in its own mount
// namespace, so nothing is mounted on the host.
const faultChildEnv = "SYNCPOD_BACKOFF_FAULT_CHILD"

func TestHostStorageFaultsAreClearErrors(t *testing.T) {
	if scenario := os.Getenv(faultChildEnv); scenario != "" {
		runFaultScenario(t, scenario)
		return
	}
	for _, scenario := range []string{"read-only mount", "full disk"} {
		t.Run(scenario, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHostStorageFaultsAreClearErrors$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), faultChildEnv+"="+scenario)
			cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
			if os.Geteuid() != 0 {
				// Unprivileged: a user namespace that keeps this uid (so
				// file permissions still apply) with the right to mount.
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
			if err != nil && canSkip && (strings.Contains(string(out), "cannot set up a private tmpfs") || errors.Is(err, syscall.EPERM)) {
				t.Skipf("SKIPPED LOUDLY: no private mount namespace for a tmpfs here (run as root or in CI to test storage faults): %v\n%s", err, out)
			}
			if err != nil || !strings.Contains(string(out), "--- PASS") {
				t.Fatalf("child: %v\n%s", err, out)
			}
			t.Logf("child:\n%s", out)
		})
	}
}

func runFaultScenario(t *testing.T, scenario string) {
	dir := t.TempDir()
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("cannot set up a private tmpfs: make / private: %v", err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k,mode=0755"); err != nil {
		t.Fatalf("cannot set up a private tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	path := filepath.Join(dir, "executor.db")
	switch scenario {
	case "read-only mount":
		if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path, Config{})
		mustSay(t, err, syscall.EROFS, path, "read-only")
	case "full disk":
		c := newClock()
		s, err := Open(path, Config{Clock: c})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Next(key, PodRef{}, c.Now()); err != nil {
			t.Fatal(err)
		}
		fill(t, filepath.Join(dir, "filler"))
		var failed error
		for i := 0; i < 200 && failed == nil; i++ {
			k := Key{PodUID: fmt.Sprintf("uid-%d", i), ContainerName: strings.Repeat("c", 200), SpecHash: "h"}
			_, failed = s.Next(k, PodRef{Name: strings.Repeat("p", 250)}, c.Now())
		}
		mustSay(t, failed, syscall.ENOSPC, path)
		if !errors.Is(failed, ErrStore) {
			t.Errorf("%v is not an ErrStore", failed)
		}
		if e, ok, err := s.Get(key); err != nil || !ok || e.Delay != DefaultInitial {
			t.Fatalf("after a failed write the committed entry reads %v, %v, %v", e, ok, err)
		}
		_ = s.Close()
		// Still full: a restart rewrites only pages the file already
		// has, so it opens, with the committed entry.
		s, err = Open(path, Config{Clock: c})
		if err != nil {
			t.Fatalf("reopen on a full disk: %v", err)
		}
		if _, ok, err := s.Get(key); !ok || err != nil {
			t.Fatalf("after reopening on a full disk the committed entry is gone: %v", err)
		}
		_ = s.Close()
		fmt.Printf("full disk: refused with %v\n", failed)
	default:
		t.Fatalf("unknown scenario %q", scenario)
	}
}

func fill(t *testing.T, path string) {
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

func mustSay(t *testing.T, err error, want error, hints ...string) {
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
