package service

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/proto/fielderr"
)

// ErrInvalidArgument classifies bad requests; it is fielderr.ErrInvalid,
// which every validation error of every syncpod service matches.
var ErrInvalidArgument = fielderr.ErrInvalid

// ToGRPC maps an error class to its gRPC status; it is the only place
// that does. nil stays nil.
func ToGRPC(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if st, ok := fielderr.StatusOf("", err); ok {
		return st.Err()
	}
	switch {
	case errors.Is(err, backoff.ErrInvalidConfig):
		return fielderr.Status("", fielderr.Errors{{Message: err.Error()}}).Err()
	case errors.Is(err, runtimeclient.ErrUnavailable):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, runtimeclient.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, runtimeclient.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, runtimeclient.ErrNameReserved):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, backoff.ErrStore):
		return status.Error(codes.Internal, fmt.Sprintf("back-off store: %v", err))
	default:
		return status.Error(codes.Internal, err.Error())
	}
}
