package runtimeclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	edge "github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/internal/errgrpc"
)

// Error classes of runtime failures; each is of an errgrpc class, which
// gives its gRPC code.
var (
	// ErrUnavailable: the runtime cannot be reached (socket missing,
	// connection refused, runtime down); the connection's own sentinel.
	ErrUnavailable = edge.ErrUnavailable
	// ErrNotFound: the container, sandbox or image does not exist.
	ErrNotFound = errgrpc.New(errgrpc.ErrNotFound, "not found")
	// ErrNameReserved: a sandbox or container with the same metadata
	// already exists (containerd: `name "..." is reserved for "<id>"`).
	ErrNameReserved = errgrpc.New(errgrpc.ErrAlreadyExists, "name is reserved")
	// ErrTimeout: the call's deadline passed.
	ErrTimeout = errgrpc.New(errgrpc.ErrDeadlineExceeded, "runtime call timed out")
)

// Classify wraps err with its class sentinel (keeping the original for
// messages); nil stays nil and an already classified error is unchanged.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range []error{ErrUnavailable, ErrNotFound, ErrNameReserved, ErrTimeout} {
		if errors.Is(err, s) {
			return err
		}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	st, ok := status.FromError(err)
	msg := err.Error()
	if ok {
		msg = st.Message()
	}
	switch {
	case strings.Contains(msg, "is reserved for"):
		return fmt.Errorf("%w: %w", ErrNameReserved, err)
	case ok && st.Code() == codes.Unavailable:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case ok && st.Code() == codes.NotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case ok && st.Code() == codes.DeadlineExceeded:
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	case ok && st.Code() == codes.Canceled:
		return fmt.Errorf("%w: %w", context.Canceled, err)
	case strings.HasSuffix(msg, ": not found") || strings.Contains(msg, "an error occurred when try to find"):
		// containerd reports some missing objects as Unknown with its
		// errdefs wording; any other "not found" in a message (say, an
		// exec'd binary missing from $PATH) is not a missing object.
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// IgnoreNotFound returns nil for ErrNotFound-class errors, where the
// kubelet ignores them (stopping or removing something already gone).
func IgnoreNotFound(err error) error {
	if errors.Is(Classify(err), ErrNotFound) {
		return nil
	}
	return err
}
