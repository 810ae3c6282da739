package store

import (
	"bufio"
	"context"
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

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// filledStore writes n pods into a fresh store file, closes it and returns
// its path.
func filledStore(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "planner.db")
	s, err := Open(Options{Path: path, Validate: fakeValidate})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := pod(fmt.Sprintf("pod-%03d", i), "busybox:1.36")
		p.Annotations = map[string]string{"filler": strings.Repeat("x", 300)}
		if _, _, err := s.Apply(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// pageLayout returns the file's page size and the ids of its pages by
// bbolt page type ("meta", "freelist", "branch", "leaf", "free").
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

// writeAt overwrites the file at off with b.
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

// expectOpenError opens path and requires an error of class want whose
// message names the file and holds every hint; nothing may panic.
func expectOpenError(t *testing.T, path string, want error, hints ...string) {
	t.Helper()
	s, err := Open(Options{Path: path, Validate: fakeValidate, OpenTimeout: 100 * time.Millisecond})
	if err == nil {
		_ = s.Close()
		t.Fatalf("Open succeeded, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("Open = %v, want %v", err, want)
	}
	for _, h := range append([]string{path}, hints...) {
		if !strings.Contains(err.Error(), h) {
			t.Errorf("error %q does not say %q", err, h)
		}
	}
}

func TestOpenOfAnEmptyFileIsCorruptNotAFreshStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "planner.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	expectOpenError(t, path, ErrCorrupt, "empty (0 bytes)", "mv "+path+" "+path+".corrupt", "backup")
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("Open changed the empty file (%v, %v): it must be left for the operator", fi, err)
	}
}

func TestOpenCreatesTheFileCompleteOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "planner.db")
	s, err := Open(Options{Path: path, Validate: fakeValidate})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "planner.db" {
		t.Fatalf("directory holds %v, want only planner.db (no temporary file left behind)", entries)
	}
	fi, _ := os.Stat(path)
	if fi.Size() == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("created file: %d bytes, mode %o; want an initialised database with mode 600", fi.Size(), fi.Mode().Perm())
	}
	// A second start opens the same file with its schema: still no error.
	s, err = Open(Options{Path: path, Validate: fakeValidate})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
}

func TestOpenOfALockedFileSaysWhoHoldsIt(t *testing.T) {
	t.Run("this process", func(t *testing.T) {
		_, _, path := openTest(t, nil)
		expectOpenError(t, path, ErrLocked, "this process", "100ms", "--data-dir")
	})
	t.Run("another process", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "planner.db")
		pid := holdInChild(t, path)
		expectOpenError(t, path, ErrLocked, fmt.Sprintf("process %d holds it", pid), "another planner")
	})
}

// holdInChild starts this test binary again to open the store at path and
// hold it until the test ends; it returns the child's pid.
func holdInChild(t *testing.T, path string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldStore$")
	cmd.Env = append(os.Environ(), "SYNCPOD_STORE_HOLD="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "holding" {
		t.Fatalf("child did not open the store: %q, %v", line, err)
	}
	return cmd.Process.Pid
}

// TestHelperHoldStore is not a test: holdInChild runs it in a child process.
func TestHelperHoldStore(t *testing.T) {
	path := os.Getenv("SYNCPOD_STORE_HOLD")
	if path == "" {
		t.Skip("helper process for TestOpenOfALockedFileSaysWhoHoldsIt")
	}
	s, err := Open(Options{Path: path, Validate: fakeValidate})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	_ = s.Close()
	os.Exit(0)
}

func TestOpenOfATruncatedFileIsCorrupt(t *testing.T) {
	path := filledStore(t, 200)
	fi, _ := os.Stat(path)
	pageSize, pages := pageLayout(t, path)
	used := 0 // pages below bbolt's high-water mark; the file may be longer
	for _, ids := range pages {
		used += len(ids)
	}
	if int64(used*pageSize) >= fi.Size() {
		t.Fatalf("test file has no unused tail: %d pages of %d bytes in %d bytes", used, pageSize, fi.Size())
	}
	// Cutting only the unused tail loses nothing: that file opens.
	tail := filepath.Join(t.TempDir(), "planner.db")
	raw, _ := os.ReadFile(path)
	if err := os.WriteFile(tail, raw[:used*pageSize], 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Path: tail, Validate: fakeValidate})
	if err != nil {
		t.Fatalf("a file cut after its last used page: %v", err)
	}
	if recs, err := s.List(context.Background(), Filter{}); err != nil || len(recs) != 200 {
		t.Fatalf("a file cut after its last used page holds %d pods (%v), want 200", len(recs), err)
	}
	_ = s.Close()
	for _, size := range []int64{100, int64(pageSize), int64(2 * pageSize), int64(4 * pageSize), int64(used*pageSize) / 2, int64((used - 1) * pageSize)} {
		t.Run(fmt.Sprintf("%d of %d bytes", size, fi.Size()), func(t *testing.T) {
			cut := filepath.Join(t.TempDir(), "planner.db")
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cut, raw[:size], 0o600); err != nil {
				t.Fatal(err)
			}
			expectOpenError(t, cut, ErrCorrupt, "mv "+cut, "backup")
			// The failed Open let go of the file: a second one fails the
			// same way instead of finding it locked.
			expectOpenError(t, cut, ErrCorrupt)
		})
	}
}

func TestOpenOfACorruptFileIsAClearErrorNotAPanic(t *testing.T) {
	path := filledStore(t, 200)
	pageSize, pages := pageLayout(t, path)
	if len(pages["leaf"]) == 0 || len(pages["branch"]) == 0 || len(pages["freelist"]) == 0 {
		t.Fatalf("test file has no leaf, branch or freelist page: %v", pages)
	}
	setFlags := func(id int, flags uint16) func(string) {
		return func(p string) {
			var b [2]byte
			binary.LittleEndian.PutUint16(b[:], flags)
			writeAt(t, p, int64(id*pageSize)+8, b[:])
		}
	}
	setID := func(id int, to uint64) func(string) {
		return func(p string) {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], to)
			writeAt(t, p, int64(id*pageSize), b[:])
		}
	}
	garbage := func(id int) func(string) {
		return func(p string) {
			writeAt(t, p, int64(id*pageSize)+16, []byte(strings.Repeat("\xde\xad\xbe\xef", pageSize/4-4)))
		}
	}
	const leafFlag, branchFlag = 0x02, 0x01
	leaf, branch, freelist := pages["leaf"][len(pages["leaf"])/2], pages["branch"][0], pages["freelist"][0]
	for _, tc := range []struct {
		name    string
		corrupt func(string)
	}{
		// Seen in the field: bbolt panics "invalid freelist page".
		{"freelist page flagged as a leaf", setFlags(freelist, leafFlag)},
		// Seen in the field: bbolt panics "Page expected to be: 2".
		{"leaf page with another page's id", setID(leaf, uint64(leaf)+1)},
		{"branch page with another page's id", setID(branch, 2)},
		{"leaf page flagged as a branch", setFlags(leaf, branchFlag)},
		{"leaf page full of garbage", garbage(leaf)},
		{"branch page full of garbage", garbage(branch)},
		{"both meta pages overwritten", func(p string) { garbage(0)(p); garbage(1)(p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "planner.db")
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			tc.corrupt(p)
			expectOpenError(t, p, ErrCorrupt, "mv "+p+" "+p+".corrupt", "backup")
			expectOpenError(t, p, ErrCorrupt) // and the lock was let go
		})
	}
}

func TestOpenRecoversFromOneDamagedMetaPage(t *testing.T) {
	path := filledStore(t, 20)
	pageSize, _ := pageLayout(t, path)
	// bbolt keeps two meta pages and uses the valid one with the newest
	// transaction: a torn write of one of them loses at most the last
	// commit, never the file.
	for _, meta := range []int{0, 1} {
		t.Run(fmt.Sprintf("meta page %d", meta), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "planner.db")
			raw, _ := os.ReadFile(path)
			if err := os.WriteFile(p, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			writeAt(t, p, int64(meta*pageSize)+16, []byte(strings.Repeat("\xff", 64)))
			s, err := Open(Options{Path: p, Validate: fakeValidate})
			if err != nil {
				t.Fatalf("Open with one good meta page: %v", err)
			}
			defer s.Close()
			recs, err := s.List(context.Background(), Filter{})
			if err != nil || len(recs) < 19 {
				t.Fatalf("after recovery: %d pods, %v; want the 20 written (19 if the torn page held the last commit)", len(recs), err)
			}
		})
	}
}

// The storage faults a host causes (a read-only mount, a directory the
// planner cannot write, a full disk) run on a private tmpfs in a child
// process in its own mount namespace, so nothing is mounted on the host.
const faultChildEnv = "SYNCPOD_STORE_FAULT_CHILD"

func TestHostStorageFaultsAreClearErrors(t *testing.T) {
	if scenario := os.Getenv(faultChildEnv); scenario != "" {
		runFaultScenario(t, scenario)
		return
	}
	for _, scenario := range []string{"read-only mount", "read-only mount, existing file", "unwritable directory", "full disk"} {
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
			if err != nil && strings.Contains(string(out), "cannot set up a private tmpfs") && os.Geteuid() != 0 && os.Getenv("CI") != "true" {
				t.Skipf("SKIPPED LOUDLY: no private mount namespace for a tmpfs here (run as root or in CI to test storage faults):\n%s", out)
			}
			if err != nil {
				var ee *exec.Error
				if errors.As(err, &ee) || (os.Geteuid() != 0 && os.Getenv("CI") != "true" && errors.Is(err, syscall.EPERM)) {
					t.Skipf("SKIPPED LOUDLY: cannot start a child in its own mount namespace: %v", err)
				}
				t.Fatalf("child failed: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "--- PASS") {
				t.Fatalf("child ran no scenario:\n%s", out)
			}
			t.Logf("child:\n%s", out)
		})
	}
}

// runFaultScenario runs in the child: it mounts a small tmpfs and plays
// one fault against the store.
func runFaultScenario(t *testing.T, scenario string) {
	dir := t.TempDir()
	mount := func(flags uintptr) {
		if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, "size=512k,mode=0755"); err != nil {
			t.Fatalf("cannot set up a private tmpfs: %v", err)
		}
	}
	// Belt and braces: nothing mounted here may propagate to the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("cannot set up a private tmpfs: make / private: %v", err)
	}
	mount(0)
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	path := filepath.Join(dir, "planner.db")
	ctx := context.Background()
	open := func() (*Store, error) { return Open(Options{Path: path, Validate: fakeValidate}) }

	switch scenario {
	case "read-only mount":
		if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Fatal(err)
		}
		_, err := open()
		mustSay(t, err, syscall.EROFS, path, "read-only", "--data-dir")
	case "read-only mount, existing file":
		s, err := open()
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Fatal(err)
		}
		_, err = open()
		mustSay(t, err, syscall.EROFS, path, "read-only")
	case "unwritable directory":
		if os.Geteuid() == 0 {
			// Root writes anywhere: act as nobody, keeping root as the
			// saved uid to come back for the clean-up.
			if err := syscall.Setresuid(65534, 65534, 0); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = syscall.Setresuid(0, 0, 0) }()
		} else if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		_, err := open()
		mustSay(t, err, syscall.EACCES, path, "must be able to read and write")
	case "full disk":
		s, err := open()
		if err != nil {
			t.Fatal(err)
		}
		acked := 0
		for i := 0; i < 5; i++ {
			if _, _, err := s.Apply(ctx, pod(fmt.Sprintf("before-%d", i), "busybox:1.36")); err != nil {
				t.Fatal(err)
			}
			acked++
		}
		filler := filepath.Join(dir, "filler")
		fill(t, filler)
		var failed error
		for i := 0; i < 50 && failed == nil; i++ {
			p := pod(fmt.Sprintf("full-%d", i), "busybox:1.36")
			p.Annotations = map[string]string{"big": strings.Repeat("y", 8000)}
			if _, _, err := s.Apply(ctx, p); err != nil {
				failed = err
			} else {
				acked++
			}
		}
		mustSay(t, failed, syscall.ENOSPC, path)
		if _, err := s.Get(ctx, &plannerv1.PodRef{Name: "before-0"}); err != nil {
			t.Fatalf("after a failed write, an acknowledged pod cannot be read: %v", err)
		}
		// Space comes back: writes work again and nothing acknowledged
		// was lost, nothing refused was stored.
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Apply(ctx, pod("after", "busybox:1.36")); err != nil {
			t.Fatalf("Apply after space was freed: %v", err)
		}
		acked++
		_ = s.Close()
		s, err = open()
		if err != nil {
			t.Fatalf("reopen after a full disk: %v", err)
		}
		recs, err := s.List(ctx, Filter{})
		_ = s.Close()
		if err != nil || len(recs) != acked {
			t.Fatalf("after reopening: %d pods (%v), want the %d acknowledged", len(recs), err, acked)
		}
		// A new file on a full disk: the create fails, no empty file stays.
		fill(t, filler)
		other := filepath.Join(dir, "other.db")
		_, err = Open(Options{Path: other, Validate: fakeValidate})
		mustSay(t, err, syscall.ENOSPC, other, "disk is full")
		if _, statErr := os.Stat(other); !errors.Is(statErr, os.ErrNotExist) {
			t.Fatalf("a failed create left %s behind (%v)", other, statErr)
		}
		fmt.Printf("full disk: %d writes acknowledged, refused with %v\n", acked, failed)
	default:
		t.Fatalf("unknown scenario %q", scenario)
	}
}

// fill writes path until the file system is full.
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

// mustSay requires err to be of class want and to say every hint.
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

func TestOpenOfAnUnreadableSchemaVersionIsCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "planner.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists(bucketMeta)
		return b.Put(keySchema, []byte{0, 0, 0, 0, 0, 0, 0, 1})
	})
	_ = db.Close()
	expectOpenError(t, path, ErrCorrupt, "schema_version")
}
