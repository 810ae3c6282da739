package static

import (
	"context"
	"errors"
	"testing"

	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/planner/store"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// while the node shuts down a new static pod is not stored (it is
// retried, and stored once admission reopens); a stored one is still
// updated.
func TestNewStaticPodWaitsForAdmission(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := e.store.Apply(ctx, pod("old", true)); err != nil {
		t.Fatal(err)
	}
	admitting := false
	e.r.opts.Admitting = func() bool { return admitting }
	updated := pod("old", true)
	updated.Spec.Containers[0].Image = "busybox:2"
	d := manifest.Diff{Changes: []manifest.Change{
		{Type: manifest.Added, File: "new.yaml", Pod: pod("new", true)},
		{Type: manifest.Updated, File: "old.yaml", Pod: updated},
	}}
	retry := e.r.Apply(ctx, d)
	if len(retry) != 1 || retry[0].Pod.GetName() != "new" {
		t.Fatalf("retry = %v, want the new pod alone", retry)
	}
	if _, err := e.store.Get(ctx, &plannerv1.PodRef{Namespace: "default", Name: "new"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the new static pod was stored during the shutdown: %v", err)
	}
	if got := e.get(t, "old").GetPod().GetSpec().GetContainers()[0].GetImage(); got != "busybox:2" {
		t.Fatalf("the stored static pod was not updated: image %s", got)
	}
	admitting = true
	if retry := e.r.Apply(ctx, manifest.Diff{Changes: retry}); len(retry) != 0 {
		t.Fatalf("retry after the cancel = %v", retry)
	}
	e.get(t, "new")
}
