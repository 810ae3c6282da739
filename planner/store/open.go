package store

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// What to do about a damaged file, said in every ErrCorrupt message.
const corruptAdvice = "stop the planner, move the file aside (mv %[1]s %[1]s.corrupt) and restore it from a backup; " +
	"starting without it makes the planner forget every desired pod, and housekeeping then removes their containers as orphans"

// openDB opens the bbolt file at path and proves it readable before
// anyone uses it. A missing file is created complete (written under a
// temporary name and linked into place), so a file that exists but is
// empty was damaged, never half-created by this code. bbolt panics (or
// faults on pages past the end of a truncated file) on some corruptions:
// those are recovered here and reported as ErrCorrupt naming the file and
// what to do; a file another process holds is ErrLocked, naming the
// holder when the kernel says who it is.
func openDB(path string, timeout time.Duration) (*bolt.DB, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := createDB(path); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fileError(path, "cannot read", err)
	case fi.IsDir():
		return nil, fmt.Errorf("open %s: is a directory, not a database file", path)
	case fi.Size() == 0:
		return nil, fmt.Errorf("open %s: %w: the file is empty (0 bytes) although it should hold the database "+
			"(this planner never leaves an empty file behind; was it truncated, or the disk full?): "+corruptAdvice, path, ErrCorrupt)
	}
	db, err := guardedOpen(path, timeout)
	if err != nil {
		return nil, err
	}
	if err := guarded(func() error { return db.View(checkTx) }); err != nil {
		_ = db.Close()
		return nil, classify(path, timeout, err)
	}
	return db, nil
}

// guardedOpen is bolt.Open with panics and memory faults turned into
// ErrCorrupt; the file it opened is closed again when it fails that way.
func guardedOpen(path string, timeout time.Duration) (*bolt.DB, error) {
	var file *os.File
	open := func(name string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, mode)
		file = f
		return f, err
	}
	var db *bolt.DB
	err := guarded(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, OpenFile: open})
		return err
	})
	var p *panicError
	if errors.As(err, &p) && file != nil {
		// bbolt gave up half-way, its file still mapped (the mapping
		// keeps the file, and so its lock, alive): unlock, then close.
		_ = syscall.Flock(int(file.Fd()), syscall.LOCK_UN)
		_ = file.Close()
	}
	if err != nil {
		return nil, classify(path, timeout, err)
	}
	return db, nil
}

// checkTx proves a freshly opened file sound before it is trusted: every
// page the file references lies inside it (bbolt would fault reading a
// truncated file later, in the middle of a request), and bbolt's own
// consistency check finds nothing.
func checkTx(tx *bolt.Tx) error {
	fi, err := os.Stat(tx.DB().Path())
	if err != nil {
		return err
	}
	if size := tx.Size(); fi.Size() < size {
		return fmt.Errorf("%w: truncated: the file has %d bytes but its pages reach byte %d", ErrCorrupt, fi.Size(), size)
	}
	var problems []string
	for err := range tx.Check() {
		if len(problems) < 5 {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: consistency check: %s", ErrCorrupt, strings.Join(problems, "; "))
	}
	return nil
}

// createDB creates an empty, initialised database file at path without
// ever letting path exist half-written: it is built under a temporary
// name, synced, and hard-linked into place (which fails if another process
// created path meanwhile; its file then wins).
func createDB(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*")
	if err != nil {
		return fileError(path, "cannot create", err)
	}
	tmp := f.Name()
	_ = f.Close()
	defer os.Remove(tmp)
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fileError(path, "cannot create", err)
	}
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return fileError(path, "cannot create", err)
	}
	if err := db.Close(); err != nil {
		return fileError(path, "cannot create", err)
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		return fileError(path, "cannot create", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the new name durable
		_ = d.Close()
	}
	return nil
}

// panicError is a panic recovered from bbolt.
type panicError struct{ v any }

func (p *panicError) Error() string { return fmt.Sprintf("bbolt panicked: %v", p.v) }

// guarded runs fn, turning a panic (and a memory fault, which is made a
// panic for this goroutine while fn runs) into a *panicError.
func guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{v: v}
		}
	}()
	return fn()
}

// classify turns an error from opening or checking the file into one that
// names the file, says what is wrong and what to do.
func classify(path string, timeout time.Duration, err error) error {
	var p *panicError
	switch {
	case errors.Is(err, ErrCorrupt):
		return fmt.Errorf("open %s: %w: "+corruptAdvice, path, err)
	case errors.As(err, &p), errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return fmt.Errorf("open %s: %w: %v: "+corruptAdvice, path, ErrCorrupt, err)
	case isFileContentError(err):
		return fmt.Errorf("open %s: %w: %v: "+corruptAdvice, path, ErrCorrupt, err)
	case errors.Is(err, berrors.ErrTimeout):
		holder := "another process"
		if pid := lockHolder(path); pid > 0 && pid != os.Getpid() {
			holder = "process " + strconv.Itoa(pid)
		} else if pid == os.Getpid() {
			holder = "this process (opened twice)"
		}
		return fmt.Errorf("open %s: %w: %s holds it (gave up after %s); is another planner running with the same --data-dir?",
			path, ErrLocked, holder, timeout)
	}
	return fileError(path, "cannot open", err)
}

// isFileContentError reports whether err, from bolt.Open of an existing
// file, is about what the file holds rather than about reaching it: bbolt
// says "file size too small" and the like without a sentinel, while
// everything the host refuses comes as a path or errno error.
func isFileContentError(err error) bool {
	var pe *fs.PathError
	var errno syscall.Errno
	return !errors.Is(err, berrors.ErrTimeout) && !errors.As(err, &pe) && !errors.As(err, &errno)
}

// fileError names the file and, for the errors an operator fixes on the
// host (permissions, a read-only mount, a full disk), says so.
func fileError(path, what string, err error) error {
	hint := ""
	switch {
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		hint = fmt.Sprintf(": the planner (uid %d) must be able to read and write the file and its directory %s", os.Geteuid(), filepath.Dir(path))
	case errors.Is(err, syscall.EROFS):
		hint = ": the file system is read-only; give --data-dir a writable directory"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		hint = ": the disk is full; free some space"
	}
	return fmt.Errorf("%s %s: %w%s", what, path, err, hint)
}

// lockHolder returns the pid holding a flock on path, from /proc/locks;
// 0 when it cannot tell.
func lockHolder(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	// "1: FLOCK  ADVISORY  WRITE 4242 fd:01:123456 0 EOF"; waiters have
	// "->" after the number and are skipped.
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	byDevice, byInode, inodeHits := 0, 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		id := strings.Split(fields[5], ":")
		if len(id) != 3 || id[2] != strconv.FormatUint(st.Ino, 10) {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil {
			continue
		}
		ma, err1 := strconv.ParseUint(id[0], 16, 32)
		mi, err2 := strconv.ParseUint(id[1], 16, 32)
		if err1 == nil && err2 == nil && ma == major && mi == minor {
			byDevice = pid
		}
		byInode = pid
		inodeHits++
	}
	if byDevice != 0 {
		return byDevice
	}
	if inodeHits == 1 { // overlay file systems report the lower device
		return byInode
	}
	return 0
}
