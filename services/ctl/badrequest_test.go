package ctl

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/proto/fielderr"
)

// TestPrintBadRequest: an InvalidArgument status with BadRequest details
// prints one field error a line, saying how many were not listed; one
// without details prints its message as it is.
func TestPrintBadRequest(t *testing.T) {
	var many fielderr.Errors
	for i := range fielderr.MaxReported + 2 {
		many = append(many, fielderr.FieldError{Path: fmt.Sprintf("spec.containers[%d].image", i), Message: "must not be empty"})
	}
	for _, tc := range []struct {
		name string
		st   *status.Status
		want string
	}{
		{"with details", fielderr.Status("ApplyPod", fielderr.Errors{
			{Path: "pod.name", Message: "must not be empty"},
			{Path: "pod.spec.containers[1].image", Message: "must not be empty"},
		}), "Error from server (BadRequest): ApplyPod: 2 invalid field(s):\n" +
			"  pod.name: must not be empty\n  pod.spec.containers[1].image: must not be empty\n"},
		{"without details", status.New(codes.InvalidArgument, "spec.containers[0].image: must not be empty"),
			"Error from server (BadRequest): spec.containers[0].image: must not be empty\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printBadRequest(&b, tc.st)
			if b.String() != tc.want {
				t.Errorf("printed\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
	t.Run("more than listed", func(t *testing.T) {
		var b bytes.Buffer
		printBadRequest(&b, fielderr.Status("", many))
		if want := "  and 2 more\n"; !bytes.HasSuffix(b.Bytes(), []byte(want)) || bytes.Count(b.Bytes(), []byte("\n")) != fielderr.MaxReported+2 {
			t.Errorf("printed\n%s\nwant %d field lines and %q", b.String(), fielderr.MaxReported, want)
		}
	})
}
