package errgrpc

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/proto/fielderr"
)

// The error classes. Each maps to the gRPC code of the same name.
var (
	// ErrInvalidArgument: the request is malformed. It is
	// fielderr.ErrInvalid, which every validation error matches, so bad
	// input is reported with its field paths.
	ErrInvalidArgument = fielderr.ErrInvalid
	// ErrNotFound: the object asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: an object of the same identity exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrFailedPrecondition: the object is in the wrong state for the
	// call; retrying the same call does not help until the state changes.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnavailable: a dependency cannot be reached or is shutting down;
	// retrying later may succeed.
	ErrUnavailable = errors.New("unavailable")
	// ErrResourceExhausted: a bound was reached (a subscriber's buffer, a
	// quota).
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrDeadlineExceeded: the work did not finish in time; so is
	// context.DeadlineExceeded.
	ErrDeadlineExceeded = errors.New("deadline exceeded")
	// ErrCanceled: the caller gave up; so is context.Canceled.
	ErrCanceled = errors.New("canceled")
	// ErrPermissionDenied: the caller may not do this.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnimplemented: the call is not supported here.
	ErrUnimplemented = errors.New("unimplemented")
	// ErrAborted: the call lost a race with a concurrent change.
	ErrAborted = errors.New("aborted")
	// ErrInternal: a broken invariant or a failure of the service's own
	// machinery (its store, its files). An error of no class is Internal.
	ErrInternal = errors.New("internal")
	// ErrUnknown: a failure the service cannot classify and says so, as a
	// container runtime does.
	ErrUnknown = errors.New("unknown")
)

// classes lists every class with its code. An error of several classes
// takes the outermost (see find); ToGRPCOp looks for bad input first.
var classes = []struct {
	class error
	code  codes.Code
}{
	{ErrInvalidArgument, codes.InvalidArgument},
	{ErrUnavailable, codes.Unavailable},
	{ErrDeadlineExceeded, codes.DeadlineExceeded},
	{context.DeadlineExceeded, codes.DeadlineExceeded},
	{ErrCanceled, codes.Canceled},
	{context.Canceled, codes.Canceled},
	{ErrNotFound, codes.NotFound},
	{ErrAlreadyExists, codes.AlreadyExists},
	{ErrFailedPrecondition, codes.FailedPrecondition},
	{ErrResourceExhausted, codes.ResourceExhausted},
	{ErrPermissionDenied, codes.PermissionDenied},
	{ErrUnimplemented, codes.Unimplemented},
	{ErrAborted, codes.Aborted},
	{ErrInternal, codes.Internal},
	{ErrUnknown, codes.Unknown},
}

// classed is an error of a class with its own text: the class does not
// appear in the message.
type classed struct {
	class error
	text  string
}

func (e *classed) Error() string { return e.text }

func (e *classed) Unwrap() error { return e.class }

// New returns an error of class (errors.Is(err, class) holds) whose text
// is text alone: the way a package declares a sentinel of its own, say
// New(ErrNotFound, "pod not found"). class may itself be such a sentinel.
func New(class error, text string) error {
	return &classed{class: class, text: text}
}

// Errorf returns an error of class whose text is formatted from format
// and args, as New. The args are formatted, not wrapped: the error's
// class is class alone.
func Errorf(class error, format string, args ...any) error {
	return New(class, fmt.Sprintf(format, args...))
}

// ToGRPC returns the gRPC status error for err; it is the one place any
// syncpod service maps errors to codes. nil stays nil; an error carrying
// a status passes through unchanged; the invalid-argument class becomes
// InvalidArgument listing every field error (fielderr.StatusOf); any
// other class becomes its code with err's text as the message, and an
// error of no class is Internal.
func ToGRPC(err error) error {
	return ToGRPCOp("", err)
}

// ToGRPCOp is ToGRPC with the message prefixed by "op: " (op is the
// RPC's name; "" adds nothing). A status err already carries is kept as
// it is.
func ToGRPCOp(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if st, ok := fielderr.StatusOf(op, err); ok {
		return st.Err()
	}
	msg := err.Error()
	if op != "" {
		msg = op + ": " + msg
	}
	return status.Error(codeOf(err), msg)
}

// codeOf is the code of err's class, Internal when it has none.
func codeOf(err error) codes.Code {
	if i := find(err); i >= 0 {
		return classes[i].code
	}
	return codes.Internal
}

// find returns the index in classes of err's class, -1 when it has none.
// It walks err's chain as errors.Is does, depth first, and stops at the
// first error that is (or, by its Is method, matches) a class: a class
// given when an error is wrapped, fmt.Errorf("%w: ...: %w", ErrX, cause),
// wins over the classes of its cause.
func find(err error) int {
	for err != nil {
		is, _ := err.(interface{ Is(error) bool })
		for i, c := range classes {
			if err == c.class || (is != nil && is.Is(c.class)) {
				return i
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if i := find(e); i >= 0 {
					return i
				}
			}
			return -1
		default:
			return -1
		}
	}
	return -1
}

// Class returns the class of err: the class sentinel it matches (the
// outermost, as ToGRPC takes it); else, for an error carrying a gRPC
// status (a peer's answer), the class of its code (ErrUnknown for codes
// without one). A class given where a peer's status was wrapped thus
// wins over the status's code. Class is nil for nil and for an error of
// no class. context.Canceled and context.DeadlineExceeded give ErrCanceled
// and ErrDeadlineExceeded.
func Class(err error) error {
	if err == nil {
		return nil
	}
	if i := find(err); i >= 0 {
		return classOf(classes[i].code)
	}
	if st, ok := status.FromError(err); ok {
		return classOf(st.Code())
	}
	return nil
}

// classOf is the class of a code: the first class listed with it.
func classOf(code codes.Code) error {
	for _, c := range classes {
		if c.code == code {
			return c.class
		}
	}
	return ErrUnknown
}

// Relay passes on err, returned by a call to the peer service from,
// with its status message prefixed by "from: " and its code and details
// unchanged, so the caller learns where the status came from. An error
// carrying no status means the connection to the peer broke: Unavailable.
func Relay(from string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return ToGRPC(Errorf(ErrUnavailable, "%s: %v", from, err))
	}
	p := st.Proto()
	p.Message = from + ": " + p.GetMessage()
	return status.ErrorProto(p)
}
