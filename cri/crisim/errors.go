package crisim

import (
	"context"
	"errors"

	"github.com/syncpod/syncpod/proto/fielderr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error classes. Every error the runtime returns wraps exactly one of
// them; toGRPC maps them to gRPC codes.
var (
	// ErrNotFound: the sandbox, container or image does not exist.
	ErrNotFound = errors.New("not found")
	// ErrReserved: the sandbox or container name is already in use.
	ErrReserved = errors.New("name is reserved")
	// ErrInvalid: the request is malformed; fielderr.ErrInvalid, the class
	// of every syncpod service's bad input, so problems carry field paths.
	ErrInvalid = fielderr.ErrInvalid
	// ErrFailedPrecondition: the object is in the wrong state for the call
	// (removing a running container, starting a container twice or with
	// no command, creating a container in a stopped sandbox).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrPullFailed: the image name matches the unpullable pattern.
	ErrPullFailed = errors.New("image pull failed")
	// ErrShuttingDown: the runtime is stopping.
	ErrShuttingDown = errors.New("crisim is shutting down")
	// ErrSubscriberBehind: an event subscriber's buffer overflowed.
	ErrSubscriberBehind = errors.New("event subscriber fell behind")
	// ErrTimeout: an ExecSync command ran past its timeout.
	ErrTimeout = errors.New("timed out")
)

// toGRPC is the one place runtime errors become gRPC status errors.
func toGRPC(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if st, ok := fielderr.StatusOf("", err); ok {
		return st.Err()
	}
	code := codes.Unknown
	switch {
	case errors.Is(err, ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, ErrReserved):
		code = codes.AlreadyExists
	case errors.Is(err, ErrFailedPrecondition):
		code = codes.FailedPrecondition
	case errors.Is(err, ErrPullFailed):
		code = codes.NotFound
	case errors.Is(err, ErrShuttingDown):
		code = codes.Unavailable
	case errors.Is(err, ErrSubscriberBehind):
		code = codes.ResourceExhausted
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}
