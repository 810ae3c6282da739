package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/validate"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// TestGrpcurlRequests keeps the example requests under testdata/grpcurl
// parseable and meaningful: invalid*.json must fail validation, the others
// must pass it and produce work.
func TestGrpcurlRequests(t *testing.T) {
	files, _ := filepath.Glob("testdata/grpcurl/*.json")
	if len(files) < 3 {
		t.Fatalf("want at least 3 example requests, have %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			req := &plannerv1.PlanRequest{}
			if err := protojson.Unmarshal(data, req); err != nil {
				t.Fatal(err)
			}
			err = validate.Request(req.GetPod(), req.GetObserved(), req.GetProbes())
			invalid := strings.HasPrefix(filepath.Base(f), "invalid")
			if invalid != (err != nil) {
				t.Fatalf("validation error = %v, invalid example = %t", err, invalid)
			}
			if !invalid {
				a := plan.Compute(req.GetPod(), req.GetObserved(), req.GetProbes())
				if plan.IsEmpty(a) {
					t.Fatal("example plans nothing")
				}
				t.Log(renderFull(a))
			}
		})
	}
}
