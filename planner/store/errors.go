package store

import (
	"errors"

	"github.com/syncpod/syncpod/internal/boltfile"
)

// Sentinel errors. Callers classify with errors.Is; the gRPC adapter maps
// each class to one status code.
var (
	// ErrNotFound: no pod matches the reference.
	ErrNotFound = errors.New("pod not found")
	// ErrInvalid: the input is malformed; the wrapped message lists every
	// field error.
	ErrInvalid = errors.New("invalid pod")
	// ErrUIDMismatch: a pod with that namespace/name exists with another
	// uid; delete it first.
	ErrUIDMismatch = errors.New("uid differs from the stored pod's")
	// ErrTerminating: the pod is being deleted and cannot be changed until
	// it is gone.
	ErrTerminating = errors.New("pod is terminating")
	// ErrSchemaTooNew: the database was written by a newer planner. It
	// is boltfile.ErrSchemaTooNew, as the executor's store reports it.
	ErrSchemaTooNew = boltfile.ErrSchemaTooNew
	// ErrCorrupt: the database file is damaged (truncated, emptied, or
	// inconsistent pages); the message names the file and what to do.
	// It is boltfile.ErrCorrupt, so errors.Is matches either name.
	ErrCorrupt = boltfile.ErrCorrupt
	// ErrLocked: another process (or another Store in this one) holds the
	// database file. It is boltfile.ErrLocked.
	ErrLocked = boltfile.ErrLocked
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store is closed")
)
