package boltfile_test

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
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/syncpod/syncpod/internal/boltfile"
	"github.com/syncpod/syncpod/internal/boltfile/boltfiletest"
)

// opts is how the tests open files: a short lock timeout, and a service
// name and advice no real service uses, so the tests see them come back.
var opts = boltfile.Options{
	Timeout:       100 * time.Millisecond,
	Service:       "tester",
	CorruptAdvice: "stop the tester, move the file aside (mv {path} {path}.corrupt) and restore it from a backup",
}

var bucketItems = []byte("items")

// filledFile writes n items of a few hundred bytes into a fresh file, one
// transaction each as the stores do (so the file has freed pages, a
// freelist page and a branch page), closes it and returns its path.
func filledFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := boltfile.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucketItems)
			if err != nil {
				return err
			}
			return b.Put(fmt.Appendf(nil, "item-%03d", i), []byte(strings.Repeat("x", 300)))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// countItems is how many items the file's items bucket holds.
func countItems(t *testing.T, db *bolt.DB) int {
	t.Helper()
	n := 0
	err := db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketItems); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// copyFile copies src (or its first size bytes, when size >= 0) to a
// fresh path with the same base name.
func copyFile(t *testing.T, src string, size int64) string {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if size >= 0 {
		raw = raw[:size]
	}
	p := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
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
	db, err := boltfile.Open(path, opts)
	if err == nil {
		_ = db.Close()
		t.Fatalf("Open succeeded, want %v", want)
	}
	boltfiletest.MustSay(t, err, want, append([]string{path}, hints...)...)
}

func TestOpenOfAnEmptyFileIsCorruptNotAFreshStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	expectOpenError(t, path, boltfile.ErrCorrupt, "empty (0 bytes)", "this tester never leaves an empty file behind",
		"mv "+path+" "+path+".corrupt", "backup")
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("Open changed the empty file (%v, %v): it must be left for the operator", fi, err)
	}
}

func TestOpenOfADirectoryIsAnError(t *testing.T) {
	dir := t.TempDir()
	db, err := boltfile.Open(dir, opts)
	if err == nil {
		_ = db.Close()
		t.Fatal("Open of a directory succeeded")
	}
	if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("Open of a directory = %v, want an error naming it a directory", err)
	}
}

func TestOpenCreatesTheFileCompleteOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "test.db")
	db, err := boltfile.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "test.db" {
		t.Fatalf("directory holds %v, want only test.db (no temporary file left behind)", entries)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("created file: %d bytes, mode %o; want an initialised database with mode 600", fi.Size(), fi.Mode().Perm())
	}
	// A second start opens the same file: still no error.
	db, err = boltfile.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
}

func TestOpenOfALockedFileSaysWhoHoldsIt(t *testing.T) {
	t.Run("this process", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "test.db")
		db, err := boltfile.Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		expectOpenError(t, path, boltfile.ErrLocked, "this process (opened twice)", "100ms", "another tester", "--data-dir")
	})
	t.Run("another process", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "test.db")
		pid := holdInChild(t, path)
		expectOpenError(t, path, boltfile.ErrLocked, fmt.Sprintf("process %d holds it", pid), "another tester")
	})
}

// holdEnv names the file a child process opens and holds.
const holdEnv = "SYNCPOD_BOLTFILE_HOLD"

// holdInChild starts this test binary again to open the file at path and
// hold it until the test ends; it returns the child's pid.
func holdInChild(t *testing.T, path string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldFile$")
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
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
		t.Fatalf("child did not open the file: %q, %v", line, err)
	}
	return cmd.Process.Pid
}

// TestHelperHoldFile is not a test: holdInChild runs it in a child process.
func TestHelperHoldFile(t *testing.T) {
	path := os.Getenv(holdEnv)
	if path == "" {
		t.Skip("helper process for TestOpenOfALockedFileSaysWhoHoldsIt")
	}
	db, err := boltfile.Open(path, opts)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	_ = db.Close()
	os.Exit(0)
}

func TestOpenOfATruncatedFileIsCorrupt(t *testing.T) {
	const items = 200
	path := filledFile(t, items)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize, pages := pageLayout(t, path)
	used := 0 // pages below bbolt's high-water mark; the file may be longer
	for _, ids := range pages {
		used += len(ids)
	}
	if int64(used*pageSize) >= fi.Size() {
		t.Fatalf("test file has no unused tail: %d pages of %d bytes in %d bytes", used, pageSize, fi.Size())
	}
	// Cutting only the unused tail loses nothing: that file opens.
	db, err := boltfile.Open(copyFile(t, path, int64(used*pageSize)), opts)
	if err != nil {
		t.Fatalf("a file cut after its last used page: %v", err)
	}
	if n := countItems(t, db); n != items {
		t.Fatalf("a file cut after its last used page holds %d items, want %d", n, items)
	}
	_ = db.Close()
	for _, size := range []int64{100, int64(pageSize), int64(2 * pageSize), int64(4 * pageSize), int64(used*pageSize) / 2, int64((used - 1) * pageSize)} {
		t.Run(fmt.Sprintf("%d of %d bytes", size, fi.Size()), func(t *testing.T) {
			cut := copyFile(t, path, size)
			expectOpenError(t, cut, boltfile.ErrCorrupt, "mv "+cut+" "+cut+".corrupt", "backup")
			// The failed Open let go of the file: a second one fails the
			// same way instead of finding it locked.
			expectOpenError(t, cut, boltfile.ErrCorrupt)
		})
	}
}

func TestOpenOfACorruptFileIsAClearErrorNotAPanic(t *testing.T) {
	path := filledFile(t, 200)
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
	ones := func(id int) func(string) {
		return func(p string) { writeAt(t, p, int64(id*pageSize)+16, []byte(strings.Repeat("\xff", 64))) }
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
		{"branch page flagged as a leaf", setFlags(branch, leafFlag)},
		{"leaf page full of garbage", garbage(leaf)},
		{"branch page full of garbage", garbage(branch)},
		{"both meta pages full of garbage", func(p string) { garbage(0)(p); garbage(1)(p) }},
		{"both meta pages' headers overwritten", func(p string) { ones(0)(p); ones(1)(p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := copyFile(t, path, -1)
			tc.corrupt(p)
			expectOpenError(t, p, boltfile.ErrCorrupt, "mv "+p+" "+p+".corrupt", "backup")
			expectOpenError(t, p, boltfile.ErrCorrupt) // and the lock was let go
		})
	}
}

func TestOpenRecoversFromOneDamagedMetaPage(t *testing.T) {
	const items = 20
	path := filledFile(t, items)
	pageSize, _ := pageLayout(t, path)
	// bbolt keeps two meta pages and uses the valid one with the newest
	// transaction: a torn write of one of them loses at most the last
	// commit, never the file.
	for _, meta := range []int{0, 1} {
		t.Run(fmt.Sprintf("meta page %d", meta), func(t *testing.T) {
			p := copyFile(t, path, -1)
			writeAt(t, p, int64(meta*pageSize)+16, []byte(strings.Repeat("\xff", 64)))
			db, err := boltfile.Open(p, opts)
			if err != nil {
				t.Fatalf("Open with one good meta page: %v", err)
			}
			defer db.Close()
			if n := countItems(t, db); n < items-1 {
				t.Fatalf("after recovery: %d items; want the %d written (%d if the torn page held the last commit)", n, items, items-1)
			}
		})
	}
}

func TestOpenMigratedRunsTheMigrationOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := boltfile.OpenMigrated(path, opts, func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketItems)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketItems) == nil {
			return fmt.Errorf("no bucket %s after the migration", bucketItems)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestOpenMigratedFailingLeavesTheFileClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	bad := fmt.Errorf("schema version 9 is newer than this build")
	_, err := boltfile.OpenMigrated(path, opts, func(*bolt.Tx) error { return bad })
	if err == nil || !strings.Contains(err.Error(), "migrate "+path) || !errors.Is(err, bad) {
		t.Fatalf("OpenMigrated = %v, want the migration's error, naming the file", err)
	}
	// Not held: a second open does not wait for the lock.
	db, err := boltfile.Open(path, opts)
	if err != nil {
		t.Fatalf("open after a failed migration: %v", err)
	}
	_ = db.Close()
}

func TestOpenMigratedExplainsAPanic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	_, err := boltfile.OpenMigrated(path, opts, func(*bolt.Tx) error { panic("unexpected page type") })
	if !errors.Is(err, boltfile.ErrCorrupt) || !strings.Contains(err.Error(), "stop the tester") {
		t.Fatalf("OpenMigrated = %v, want ErrCorrupt with the service's advice", err)
	}
}
