package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

// TestUnchangedAgreesWithCompute: over random pairs of a record
// and a listing (ids and states drawn from small sets, records shuffled,
// with and without their index, small and past the scan limit), Unchanged
// is true only when Compute finds no event, and it is true for a listing
// against the record made from it, whatever the record's order.
func TestUnchangedAgreesWithCompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sbStates := []runtimeapi.PodSandboxState{runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	cStates := []runtimeapi.ContainerState{runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED,
		runtimeapi.ContainerState_CONTAINER_CREATED, runtimeapi.ContainerState_CONTAINER_UNKNOWN}
	listing := func(n int) *observe.Listing {
		l := &observe.Listing{UID: "u"}
		for i := range rng.IntN(2) + 1 {
			l.Sandboxes = append(l.Sandboxes, &runtimeapi.PodSandbox{Id: fmt.Sprintf("s%d", i), State: sbStates[rng.IntN(2)]})
		}
		for i := range rng.IntN(n) {
			l.Containers = append(l.Containers, &runtimeapi.Container{Id: fmt.Sprintf("c%d", rng.IntN(n)*1000+i), State: cStates[rng.IntN(4)]})
		}
		return l
	}
	for i := range 4000 {
		n := 4
		if i%4 == 0 {
			n = unchangedScanLimit + 10
		}
		cur := listing(n)
		rec := FromListing(cur)
		rng.Shuffle(len(rec.Entries), func(a, b int) { rec.Entries[a], rec.Entries[b] = rec.Entries[b], rec.Entries[a] })
		if i%2 == 0 {
			rec.index()
		}
		if len(rec.Entries) <= unchangedScanLimit || rec.idx != nil {
			if !rec.Unchanged(cur) {
				t.Fatalf("case %d: a record made from the listing is not unchanged: %+v", i, rec.Entries)
			}
		}
		// Against another random listing, or the same one with one state
		// changed.
		other := listing(n)
		if i%3 == 0 && len(cur.Containers) > 0 {
			other = &observe.Listing{UID: "u", Sandboxes: cur.Sandboxes, Containers: slices.Clone(cur.Containers)}
			k := rng.IntN(len(other.Containers))
			other.Containers[k] = &runtimeapi.Container{Id: other.Containers[k].GetId(), State: cStates[rng.IntN(4)]}
		}
		if rec.Unchanged(other) && len(Compute("u", rec, FromListing(other))) > 0 {
			t.Fatalf("case %d: Unchanged but Compute has events %v", i, Compute("u", rec, FromListing(other)))
		}
	}
	var nilRec *Record
	if !nilRec.Unchanged(nil) || nilRec.Unchanged(&observe.Listing{}) || FromListing(listing(3)).Unchanged(nil) {
		t.Error("nil records and listings")
	}
}
