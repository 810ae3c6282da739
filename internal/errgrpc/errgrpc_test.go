package errgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
)

// TestToGRPCEveryClass: every class, bare, wrapped with %w and as a
// sentinel of its own, maps to its code with the error's text as the
// message, and Class reads the class back from the status.
func TestToGRPCEveryClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		class error
		code  codes.Code
	}{
		{"not found", errgrpc.ErrNotFound, codes.NotFound},
		{"already exists", errgrpc.ErrAlreadyExists, codes.AlreadyExists},
		{"failed precondition", errgrpc.ErrFailedPrecondition, codes.FailedPrecondition},
		{"unavailable", errgrpc.ErrUnavailable, codes.Unavailable},
		{"resource exhausted", errgrpc.ErrResourceExhausted, codes.ResourceExhausted},
		{"deadline exceeded", errgrpc.ErrDeadlineExceeded, codes.DeadlineExceeded},
		{"canceled", errgrpc.ErrCanceled, codes.Canceled},
		{"permission denied", errgrpc.ErrPermissionDenied, codes.PermissionDenied},
		{"unimplemented", errgrpc.ErrUnimplemented, codes.Unimplemented},
		{"aborted", errgrpc.ErrAborted, codes.Aborted},
		{"internal", errgrpc.ErrInternal, codes.Internal},
		{"unknown", errgrpc.ErrUnknown, codes.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sentinel := errgrpc.New(tc.class, "the thing is so")
			for _, c := range []struct {
				err  error
				want string
			}{
				{tc.class, tc.class.Error()},
				{fmt.Errorf("get x: %w", tc.class), "get x: " + tc.class.Error()},
				{sentinel, "the thing is so"},
				{fmt.Errorf("get x: %w", sentinel), "get x: the thing is so"},
				{errgrpc.Errorf(tc.class, "x %d is %s", 7, "so"), "x 7 is so"},
			} {
				got := status.Convert(errgrpc.ToGRPC(c.err))
				if got.Code() != tc.code || got.Message() != c.want {
					t.Errorf("ToGRPC(%v) = %v %q, want %v %q", c.err, got.Code(), got.Message(), tc.code, c.want)
				}
				if class := errgrpc.Class(c.err); class != tc.class {
					t.Errorf("Class(%v) = %v, want %v", c.err, class, tc.class)
				}
				if class := errgrpc.Class(got.Err()); class != tc.class {
					t.Errorf("Class of its status %v = %v, want %v", got.Code(), class, tc.class)
				}
			}
			if !errors.Is(sentinel, tc.class) {
				t.Errorf("New(%v, ...) does not match its class", tc.class)
			}
		})
	}
}

func TestToGRPC(t *testing.T) {
	var fields fielderr.List
	fields.Add("pod.name", "must not be empty")
	fields.Add("pod.spec.containers[1].image", "must not be empty")
	invalidPod := errgrpc.New(errgrpc.ErrInvalidArgument, "invalid pod")
	for _, tc := range []struct {
		name   string
		op     string
		err    error
		code   codes.Code
		msg    string
		fields []string // paths of the BadRequest detail's violations
	}{
		{name: "nil", err: nil, code: codes.OK},
		{name: "field errors", err: fmt.Errorf("apply: %w", fields.Err()), code: codes.InvalidArgument,
			msg:    "2 invalid field(s): pod.name: must not be empty; pod.spec.containers[1].image: must not be empty",
			fields: []string{"pod.name", "pod.spec.containers[1].image"}},
		{name: "field errors with op", op: "ApplyPod", err: fields.Err(), code: codes.InvalidArgument,
			msg:    "ApplyPod: 2 invalid field(s): pod.name: must not be empty; pod.spec.containers[1].image: must not be empty",
			fields: []string{"pod.name", "pod.spec.containers[1].image"}},
		{name: "invalid sentinel", err: fmt.Errorf("%w: bad mode", invalidPod), code: codes.InvalidArgument,
			msg: "1 invalid field(s): invalid pod: bad mode", fields: []string{""}},
		{name: "invalid sentinel with op", op: "Op", err: invalidPod, code: codes.InvalidArgument,
			msg: "Op: 1 invalid field(s): invalid pod", fields: []string{""}},
		{name: "context canceled", err: context.Canceled, code: codes.Canceled, msg: "context canceled"},
		{name: "context deadline", err: fmt.Errorf("rpc: %w", context.DeadlineExceeded), code: codes.DeadlineExceeded,
			msg: "rpc: context deadline exceeded"},
		{name: "op prefixes the message", op: "GetPod", err: errgrpc.New(errgrpc.ErrNotFound, "pod not found"),
			code: codes.NotFound, msg: "GetPod: pod not found"},
		{name: "status passes through", err: status.Error(codes.Aborted, "kept"), code: codes.Aborted, msg: "kept"},
		{name: "status passes through without op", op: "Op", err: status.Error(codes.Aborted, "kept"), code: codes.Aborted, msg: "kept"},
		{name: "wrapped status passes through", err: fmt.Errorf("call: %w", status.Error(codes.NotFound, "gone")),
			code: codes.NotFound, msg: "call: rpc error: code = NotFound desc = gone"},
		{name: "no class is Internal", err: errors.New("disk on fire"), code: codes.Internal, msg: "disk on fire"},
		{name: "no class with op", op: "Op", err: errors.New("disk on fire"), code: codes.Internal, msg: "Op: disk on fire"},
		{name: "the outermost class wins", err: fmt.Errorf("%w: %w", errgrpc.ErrUnavailable, context.Canceled),
			code: codes.Unavailable, msg: "unavailable: context canceled"},
		{name: "the outermost class wins over a deadline", err: fmt.Errorf("%w: start: %w", errgrpc.ErrFailedPrecondition, context.DeadlineExceeded),
			code: codes.FailedPrecondition, msg: "failed precondition: start: context deadline exceeded"},
		{name: "the outermost class wraps a sentinel", err: fmt.Errorf("%w: %w", errgrpc.ErrNotFound, errgrpc.New(errgrpc.ErrAborted, "raced")),
			code: codes.NotFound, msg: "not found: raced"},
		{name: "a class inside a join", err: fmt.Errorf("sync: %w", errors.Join(errors.New("first"), errgrpc.New(errgrpc.ErrAborted, "raced"))),
			code: codes.Aborted, msg: "sync: first\nraced"},
		{name: "a class of a class", err: errgrpc.New(errgrpc.New(errgrpc.ErrNotFound, "pod not found"), "uid not found"),
			code: codes.NotFound, msg: "uid not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := errgrpc.ToGRPCOp(tc.op, tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("ToGRPC(nil) = %v", got)
				}
				return
			}
			st := status.Convert(got)
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Errorf("got %v %q, want %v %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
			var paths []string
			for _, fe := range fielderr.FromStatus(st) {
				paths = append(paths, fe.Path)
			}
			if fmt.Sprintf("%q", paths) != fmt.Sprintf("%q", tc.fields) {
				t.Errorf("BadRequest field paths %q, want %q", paths, tc.fields)
			}
		})
	}
}

func TestClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"nil", nil, nil},
		{"no class", errors.New("boom"), nil},
		{"field errors", fielderr.Errors{{Path: "a", Message: "bad"}}, errgrpc.ErrInvalidArgument},
		{"context canceled", context.Canceled, errgrpc.ErrCanceled},
		{"context deadline", context.DeadlineExceeded, errgrpc.ErrDeadlineExceeded},
		{"a peer's InvalidArgument", status.Error(codes.InvalidArgument, "x"), errgrpc.ErrInvalidArgument},
		{"a code without a class", status.Error(codes.DataLoss, "x"), errgrpc.ErrUnknown},
		{"a class given to a peer's status wins", fmt.Errorf("%w: %w", errgrpc.ErrNotFound, status.Error(codes.Unknown, "no such container")), errgrpc.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errgrpc.Class(tc.err); got != tc.want {
				t.Errorf("Class(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestRelay(t *testing.T) {
	bad := fielderr.Status("", fielderr.Errors{{Path: "pod_uid", Message: "required"}}).Err()
	for _, tc := range []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"nil", nil, codes.OK, ""},
		{"a status", status.Error(codes.NotFound, "container c not found"), codes.NotFound, "executor: container c not found"},
		{"bad input keeps its fields", bad, codes.InvalidArgument, "executor: 1 invalid field(s): pod_uid: required"},
		{"no status is a broken connection", errors.New("transport is closing"), codes.Unavailable, "executor: transport is closing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := errgrpc.Relay("executor", tc.err)
			st := status.Convert(got)
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Errorf("got %v %q, want %v %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
			if tc.code == codes.InvalidArgument {
				var br *errdetails.BadRequest
				for _, d := range st.Details() {
					if b, ok := d.(*errdetails.BadRequest); ok {
						br = b
					}
				}
				if br == nil || len(br.GetFieldViolations()) != 1 || !strings.Contains(br.GetFieldViolations()[0].GetField(), "pod_uid") {
					t.Errorf("details %v, want the peer's BadRequest", st.Details())
				}
			}
		})
	}
}
