package crisim

import (
	"github.com/syncpod/syncpod/internal/errgrpc"
)

// Error classes. Every error the runtime returns wraps exactly one of
// them; each is of an errgrpc class, which gives its gRPC code.
var (
	// ErrNotFound: the sandbox, container or image does not exist.
	ErrNotFound = errgrpc.New(errgrpc.ErrNotFound, "not found")
	// ErrReserved: the sandbox or container name is already in use.
	ErrReserved = errgrpc.New(errgrpc.ErrAlreadyExists, "name is reserved")
	// ErrInvalid: the request is malformed; errgrpc.ErrInvalidArgument
	// (fielderr.ErrInvalid), the class of every syncpod service's bad
	// input, so problems carry field paths.
	ErrInvalid = errgrpc.ErrInvalidArgument
	// ErrFailedPrecondition: the object is in the wrong state for the call
	// (removing a running container, starting a container twice or with
	// no command, creating a container in a stopped sandbox).
	ErrFailedPrecondition = errgrpc.New(errgrpc.ErrFailedPrecondition, "failed precondition")
	// ErrPullFailed: the image name matches the unpullable pattern.
	ErrPullFailed = errgrpc.New(errgrpc.ErrNotFound, "image pull failed")
	// ErrShuttingDown: the runtime is stopping.
	ErrShuttingDown = errgrpc.New(errgrpc.ErrUnavailable, "crisim is shutting down")
	// ErrSubscriberBehind: an event subscriber's buffer overflowed.
	ErrSubscriberBehind = errgrpc.New(errgrpc.ErrResourceExhausted, "event subscriber fell behind")
	// ErrTimeout: an ExecSync command ran past its timeout.
	ErrTimeout = errgrpc.New(errgrpc.ErrDeadlineExceeded, "timed out")
)

// classify is the runtime's one rule on top of errgrpc.ToGRPC: an error
// of no class (the shim's, the state files') is Unknown, as a container
// runtime reports it, not Internal.
func classify(err error) error {
	if err != nil && errgrpc.Class(err) == nil {
		return errgrpc.New(errgrpc.ErrUnknown, err.Error())
	}
	return err
}
