package service

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/proto/fielderr"
)

// toStatus is the one place where the planner's errors become gRPC
// statuses: validation errors are InvalidArgument listing every field error
// in the message and as google.rpc.BadRequest field violations
// (fielderr.Status, bounded); store
// errors map to NotFound, FailedPrecondition (uid mismatch, terminating)
// and Unavailable (store closed); context errors keep their meaning; an
// error that already is a status passes through; anything else is
// Internal.
func toStatus(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	// Bad input, with its field paths: the mapping every service shares.
	if st, ok := fielderr.StatusOf(op, err); ok {
		return st.Err()
	}
	switch {
	case errors.Is(err, store.ErrInvalid):
		return fielderr.Status(op, fielderr.Errors{{Message: err.Error()}}).Err()
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConfigNotFound):
		return status.Errorf(codes.NotFound, "%s: %v", op, err)
	case errors.Is(err, store.ErrUIDMismatch), errors.Is(err, store.ErrTerminating), errors.Is(err, store.ErrImmutable):
		return status.Errorf(codes.FailedPrecondition, "%s: %v", op, err)
	case errors.Is(err, store.ErrClosed):
		return status.Errorf(codes.Unavailable, "%s: %v", op, err)
	case errors.Is(err, context.Canceled):
		return status.Errorf(codes.Canceled, "%s: %v", op, err)
	case errors.Is(err, context.DeadlineExceeded):
		return status.Errorf(codes.DeadlineExceeded, "%s: %v", op, err)
	default:
		return status.Errorf(codes.Internal, "%s: %v", op, err)
	}
}
