package runtimeclient

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"unavailable", status.Error(codes.Unavailable, "connection refused"), ErrUnavailable},
		{"not found code", status.Error(codes.NotFound, "no such container"), ErrNotFound},
		{"not found in message", status.Error(codes.Unknown, `an error occurred when try to find container "x": not found`), ErrNotFound},
		{"errdefs not found suffix", status.Error(codes.Unknown, `get sandbox info: sandbox "x": not found`), ErrNotFound},
		{"a missing binary is not a missing container", status.Error(codes.Unknown, `exec: "frob": executable file not found in $PATH`), nil},
		{"name reserved", status.Error(codes.Unknown, `failed to reserve sandbox name "a_b_c_0": name "a_b_c_0" is reserved for "abc"`), ErrNameReserved},
		{"deadline", context.DeadlineExceeded, ErrTimeout},
		{"deadline code", status.Error(codes.DeadlineExceeded, "x"), ErrTimeout},
		{"canceled", status.Error(codes.Canceled, "x"), context.Canceled},
		{"wrapped", fmt.Errorf("op: %w", status.Error(codes.Unavailable, "x")), ErrUnavailable},
		{"other", status.Error(codes.Internal, "boom"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.err)
			if tc.want == nil {
				for _, s := range []error{ErrUnavailable, ErrNotFound, ErrNameReserved, ErrTimeout} {
					if errors.Is(got, s) {
						t.Fatalf("Classify(%v) is %v, want unclassified", tc.err, s)
					}
				}
				return
			}
			if !errors.Is(got, tc.want) {
				t.Fatalf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	if Classify(nil) != nil {
		t.Fatal("Classify(nil) != nil")
	}
	if IgnoreNotFound(status.Error(codes.NotFound, "x")) != nil {
		t.Fatal("IgnoreNotFound kept a NotFound")
	}
}
