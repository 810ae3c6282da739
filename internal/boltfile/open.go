package boltfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Mode is the permission of every database file this package creates.
const Mode os.FileMode = 0o600

// Options say how to open a service's file and how to word its errors.
type Options struct {
	// Timeout bounds the wait for the file lock another process (or another
	// handle in this one) holds; 0 waits for ever, as bbolt does.
	Timeout time.Duration
	// Service names the program that owns the file ("planner",
	// "executor"), in the errors: "is another planner running with the
	// same --data-dir?".
	Service string
	// CorruptAdvice says what to do about a damaged file and what starting
	// without it costs; it ends every ErrCorrupt message. Each "{path}" in
	// it is replaced by the file's path.
	CorruptAdvice string
}

// Open opens the bbolt file at path and proves it readable before it is
// returned: a missing file is created complete; a damaged one is an error
// wrapping ErrCorrupt, a held one an error wrapping ErrLocked, and
// neither leaves the file open or locked.
func Open(path string, o Options) (*bolt.DB, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := create(path, o); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, o.FileError(path, "cannot read", err)
	case fi.IsDir():
		return nil, fmt.Errorf("open %s: is a directory, not a database file", path)
	case fi.Size() == 0:
		return nil, fmt.Errorf("open %s: %w: the file is empty (0 bytes) although it should hold the database "+
			"(this %s never leaves an empty file behind; was it truncated, or the disk full?): %s",
			path, ErrCorrupt, o.Service, o.advice(path))
	}
	db, err := guardedOpen(path, o)
	if err != nil {
		return nil, err
	}
	if err := Guard(func() error { return db.View(checkTx) }); err != nil {
		_ = db.Close()
		return nil, o.Explain(path, err)
	}
	return db, nil
}

// OpenMigrated opens the file at path as Open does, then brings its
// contents to the current schema with migrate in one write transaction.
// A migration that fails leaves the file closed; a panic in it (a damaged
// file bbolt trips over) is explained as Open's errors are.
func OpenMigrated(path string, o Options, migrate func(*bolt.Tx) error) (*bolt.DB, error) {
	db, err := Open(path, o)
	if err != nil {
		return nil, err
	}
	if err := Guard(func() error { return db.Update(migrate) }); err != nil {
		_ = db.Close()
		var p *PanicError
		if errors.As(err, &p) {
			return nil, o.Explain(path, err)
		}
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return db, nil
}

// guardedOpen is bolt.Open with panics and memory faults turned into
// ErrCorrupt; the file it opened is closed again when it fails that way.
func guardedOpen(path string, o Options) (*bolt.DB, error) {
	var file *os.File
	open := func(name string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, mode)
		file = f
		return f, err
	}
	var db *bolt.DB
	err := Guard(func() error {
		var err error
		db, err = bolt.Open(path, Mode, &bolt.Options{Timeout: o.Timeout, OpenFile: open})
		return err
	})
	var p *PanicError
	if errors.As(err, &p) && file != nil {
		// bbolt gave up half-way, its file still mapped (the mapping
		// keeps the file, and so its lock, alive): unlock, then close.
		_ = syscall.Flock(int(file.Fd()), syscall.LOCK_UN)
		_ = file.Close()
	}
	if err != nil {
		return nil, o.Explain(path, err)
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

// create makes an empty, initialised database file at path without ever
// letting path exist half-written: it is built under a temporary name,
// synced, and hard-linked into place (which fails if another process
// created path meanwhile; its file then wins).
func create(path string, o Options) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*")
	if err != nil {
		return o.FileError(path, "cannot create", err)
	}
	tmp := f.Name()
	_ = f.Close()
	defer os.Remove(tmp)
	if err := os.Chmod(tmp, Mode); err != nil {
		return o.FileError(path, "cannot create", err)
	}
	db, err := bolt.Open(tmp, Mode, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return o.FileError(path, "cannot create", err)
	}
	if err := db.Close(); err != nil {
		return o.FileError(path, "cannot create", err)
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		return o.FileError(path, "cannot create", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the new name durable
		_ = d.Close()
	}
	return nil
}
