package store

import (
	"github.com/syncpod/syncpod/internal/boltfile"
	"github.com/syncpod/syncpod/internal/errgrpc"
)

// Sentinel errors. Callers classify with errors.Is; each is of an
// errgrpc class (the database's own failures are of none: Internal), so
// the gRPC layer needs no table of its own.
var (
	// ErrNotFound: no pod matches the reference.
	ErrNotFound = errgrpc.New(errgrpc.ErrNotFound, "pod not found")
	// ErrInvalid: the input is malformed; the wrapped message lists every
	// field error. Its class is InvalidArgument: field errors it wraps
	// keep their paths.
	ErrInvalid = errgrpc.New(errgrpc.ErrInvalidArgument, "invalid pod")
	// ErrUIDMismatch: a pod with that namespace/name exists with another
	// uid; delete it first.
	ErrUIDMismatch = errgrpc.New(errgrpc.ErrFailedPrecondition, "uid differs from the stored pod's")
	// ErrTerminating: the pod is being deleted and cannot be changed until
	// it is gone.
	ErrTerminating = errgrpc.New(errgrpc.ErrFailedPrecondition, "pod is terminating")
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
	ErrClosed = errgrpc.New(errgrpc.ErrUnavailable, "store is closed")
)
