package diff

import (
	"testing"

	"github.com/syncpod/syncpod/cri/observe"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestFromListingStates: a not-ready sandbox is recorded exited and a
// created container unknown, as the kubelet's relist records them.
func TestFromListingStates(t *testing.T) {
	if FromListing(nil) != nil {
		t.Error("FromListing(nil) is not nil")
	}
	r := FromListing(&observe.Listing{
		UID:        "b",
		Sandboxes:  []*runtimeapi.PodSandbox{{Id: "s2", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}},
		Containers: []*runtimeapi.Container{{Id: "c2", State: runtimeapi.ContainerState_CONTAINER_CREATED}},
	})
	want := map[string]State{"s2": Exited, "c2": Unknown}
	if r.UID != "b" || len(r.Entries) != len(want) {
		t.Fatalf("record %+v", r)
	}
	for _, e := range r.Entries {
		if want[e.ID] != e.State || e.Sandbox != (e.ID == "s2") {
			t.Errorf("R-13.3: %s state %s sandbox %v, want %s", e.ID, e.State, e.Sandbox, want[e.ID])
		}
	}
}
