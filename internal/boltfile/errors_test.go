package boltfile_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/syncpod/syncpod/internal/boltfile"
)

func TestGuardTurnsAPanicIntoAnError(t *testing.T) {
	err := boltfile.Guard(func() error { panic("invalid freelist page") })
	var p *boltfile.PanicError
	if !errors.As(err, &p) || p.Value != "invalid freelist page" {
		t.Fatalf("Guard = %v, want a PanicError with the panic's value", err)
	}
	want := errors.New("plain")
	if err := boltfile.Guard(func() error { return want }); err != want {
		t.Fatalf("Guard = %v, want fn's own error returned as is", err)
	}
}

func TestExplainClassifiesEveryKindOfFailure(t *testing.T) {
	const path = "/data/test.db"
	advice := "mv " + path + " " + path + ".corrupt"
	for _, tc := range []struct {
		name  string
		err   error
		want  error // class, matched with errors.Is
		hints []string
	}{
		{"recovered panic", &boltfile.PanicError{Value: "Page expected to be: 2"}, boltfile.ErrCorrupt, []string{"Page expected to be: 2", advice}},
		{"bbolt invalid", berrors.ErrInvalid, boltfile.ErrCorrupt, []string{advice}},
		{"bbolt checksum", berrors.ErrChecksum, boltfile.ErrCorrupt, []string{advice}},
		{"bbolt version mismatch", berrors.ErrVersionMismatch, boltfile.ErrCorrupt, []string{advice}},
		{"bbolt says the file is too small", errors.New("file size too small"), boltfile.ErrCorrupt, []string{"file size too small", advice}},
		{"already classified", fmt.Errorf("%w: truncated", boltfile.ErrCorrupt), boltfile.ErrCorrupt, []string{"truncated", advice}},
		{"lock timeout", berrors.ErrTimeout, boltfile.ErrLocked, []string{"gave up after 100ms", "another tester"}},
		{"permission", &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}, syscall.EACCES,
			[]string{"cannot open", "the tester (uid", "must be able to read and write", "/data"}},
		{"read-only", &fs.PathError{Op: "open", Path: path, Err: syscall.EROFS}, syscall.EROFS, []string{"read-only", "--data-dir"}},
		{"disk full", syscall.ENOSPC, syscall.ENOSPC, []string{"disk is full"}},
		{"quota", syscall.EDQUOT, syscall.EDQUOT, []string{"disk is full"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := opts.Explain(path, tc.err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Explain(%v) = %v, want %v", tc.err, err, tc.want)
			}
			for _, h := range append([]string{path}, tc.hints...) {
				if !strings.Contains(err.Error(), h) {
					t.Errorf("Explain(%v) = %q, does not say %q", tc.err, err, h)
				}
			}
			if tc.want != boltfile.ErrCorrupt && errors.Is(err, boltfile.ErrCorrupt) {
				t.Errorf("Explain(%v) = %v: a host error classed as corrupt", tc.err, err)
			}
		})
	}
}

func TestCorruptKeepsTheCauseAndSaysWhatToDo(t *testing.T) {
	cause := errors.New(`backoff/uid-001: record does not decode`)
	err := opts.Corrupt("/data/test.db", cause)
	if !errors.Is(err, boltfile.ErrCorrupt) || !errors.Is(err, cause) {
		t.Fatalf("Corrupt = %v, want it to wrap both ErrCorrupt and the cause", err)
	}
	want := "open /data/test.db: database file is corrupt: backoff/uid-001: record does not decode: " +
		"stop the tester, move the file aside (mv /data/test.db /data/test.db.corrupt) and restore it from a backup"
	if err.Error() != want {
		t.Fatalf("Corrupt says\n%q\nwant\n%q", err, want)
	}
}
