package boltfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	berrors "go.etcd.io/bbolt/errors"
)

// Error classes. Callers classify with errors.Is; each service's store
// re-exports them under its own name, so either name matches.
var (
	// ErrCorrupt: the database file is damaged (truncated, emptied, or
	// inconsistent pages); the message names the file and what to do.
	ErrCorrupt = errors.New("database file is corrupt")
	// ErrLocked: another process (or another handle in this one) holds
	// the database file.
	ErrLocked = errors.New("database file is locked")
)

// PanicError is a panic recovered from bbolt by Guard.
type PanicError struct {
	// Value is what bbolt panicked with (a runtime.Error for a memory
	// fault).
	Value any
}

func (p *PanicError) Error() string { return fmt.Sprintf("bbolt panicked: %v", p.Value) }

// Guard runs fn, turning a panic (and a memory fault, which is made a
// panic for this goroutine while fn runs) into a *PanicError. Stores run
// their first transactions on a freshly opened file under it, and pass
// what it returns to Explain.
func Guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v}
		}
	}()
	return fn()
}

// Explain turns an error from opening, checking or first reading the file
// at path into one that names the file, says what is wrong and what to do:
// a panic, a bbolt format error or an ErrCorrupt becomes ErrCorrupt with
// the service's advice, a lock timeout ErrLocked naming the holder, and
// anything the host refused a FileError.
func (o Options) Explain(path string, err error) error {
	var p *PanicError
	switch {
	case errors.Is(err, ErrCorrupt):
		return fmt.Errorf("open %s: %w: %s", path, err, o.advice(path))
	case errors.As(err, &p), errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping),
		isFileContentError(err):
		return fmt.Errorf("open %s: %w: %v: %s", path, ErrCorrupt, err, o.advice(path))
	case errors.Is(err, berrors.ErrTimeout):
		holder := "another process"
		if pid := lockHolder(path); pid > 0 && pid != os.Getpid() {
			holder = "process " + strconv.Itoa(pid)
		} else if pid == os.Getpid() {
			holder = "this process (opened twice)"
		}
		return fmt.Errorf("open %s: %w: %s holds it (gave up after %s); is another %s running with the same --data-dir?",
			path, ErrLocked, holder, o.Timeout, o.Service)
	}
	return o.FileError(path, "cannot open", err)
}

// Corrupt is the ErrCorrupt error for the file at path, with cause saying
// what was found (cause stays matchable with errors.Is) and the service's
// advice.
func (o Options) Corrupt(path string, cause error) error {
	return fmt.Errorf("open %s: %w: %w: %s", path, ErrCorrupt, cause, o.advice(path))
}

// FileError names the file and, for the errors an operator fixes on the
// host (permissions, a read-only mount, a full disk), says so; what is the
// operation that failed ("cannot open").
func (o Options) FileError(path, what string, err error) error {
	hint := ""
	switch {
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		hint = fmt.Sprintf(": the %s (uid %d) must be able to read and write the file and its directory %s", o.Service, os.Geteuid(), filepath.Dir(path))
	case errors.Is(err, syscall.EROFS):
		hint = ": the file system is read-only; give --data-dir a writable directory"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		hint = ": the disk is full; free some space"
	}
	return fmt.Errorf("%s %s: %w%s", what, path, err, hint)
}

// advice is CorruptAdvice for the file at path.
func (o Options) advice(path string) string {
	return strings.ReplaceAll(o.CorruptAdvice, "{path}", path)
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
