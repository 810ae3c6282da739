package service

import (
	"errors"

	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/internal/errgrpc"
)

// ErrInvalidArgument classifies bad requests; it is
// errgrpc.ErrInvalidArgument (fielderr.ErrInvalid), which every
// validation error of every syncpod service matches.
var ErrInvalidArgument = errgrpc.ErrInvalidArgument

// classify gives a failure of the back-off store that has no other class
// the executor's message, "back-off store: ...", as Internal; the
// runtime's and the back-off's sentinels carry their classes already.
// Handlers return errgrpc.ToGRPC(classify(err)) for what the runner,
// the runtime and the store return.
func classify(err error) error {
	if errors.Is(err, backoff.ErrStore) && errgrpc.Class(err) == nil {
		return errgrpc.Errorf(errgrpc.ErrInternal, "back-off store: %v", err)
	}
	return err
}
