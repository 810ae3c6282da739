package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/cri"
)

// ErrInvalidArgument classifies bad requests.
var ErrInvalidArgument = errors.New("invalid argument")

// FieldError is one problem with a request field.
type FieldError struct {
	// Field is the path, e.g. "actions.containers_to_start[0].name".
	Field string
	// Problem says what is wrong.
	Problem string
}

// InvalidError lists every problem of a request; it is ErrInvalidArgument.
type InvalidError struct {
	// Fields are the problems, in request order.
	Fields []FieldError
}

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Problem
	}
	return strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalidArgument }

// ToGRPC maps an error class to its gRPC status; it is the only place
// that does. nil stays nil.
func ToGRPC(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var inv *InvalidError
	switch {
	case errors.As(err, &inv):
		st := status.New(codes.InvalidArgument, err.Error())
		br := &errdetails.BadRequest{}
		for _, f := range inv.Fields {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: f.Field, Description: f.Problem})
		}
		if d, derr := st.WithDetails(br); derr == nil {
			return d.Err()
		}
		return st.Err()
	case errors.Is(err, ErrInvalidArgument), errors.Is(err, backoff.ErrInvalidConfig):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, cri.ErrUnavailable):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, cri.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, cri.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, cri.ErrNameReserved):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, backoff.ErrStore):
		return status.Error(codes.Internal, fmt.Sprintf("back-off store: %v", err))
	default:
		return status.Error(codes.Internal, err.Error())
	}
}
