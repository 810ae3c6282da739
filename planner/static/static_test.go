package static

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/validate"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type env struct {
	dir   string
	store *store.Store
	src   *manifest.Source
	r     *Reconciler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{dir: t.TempDir()}
	var err error
	e.store, err = store.Open(store.Options{Path: filepath.Join(t.TempDir(), "p.db"), Validate: validate.Pod})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.store.Close() })
	e.src = manifest.NewSource(manifest.Options{Dir: e.dir, DisableWatch: true,
		NewTicker: func(time.Duration) (<-chan time.Time, func()) { return make(chan time.Time), func() {} }})
	e.r, err = New(Options{Source: e.src, Store: e.store, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) write(t *testing.T, name, podName string) {
	t.Helper()
	y := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers: [{name: c, image: busybox}]\n", podName)
	if err := os.WriteFile(filepath.Join(e.dir, name), []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (e *env) get(t *testing.T, name string) *plannerv1.PodRecord {
	t.Helper()
	rec, err := e.store.Get(context.Background(), &plannerv1.PodRef{Namespace: "default", Name: name})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return rec
}

func pod(name string, static bool) *syncpodv1.Pod {
	p := &syncpodv1.Pod{Name: name, Namespace: "default", Spec: &syncpodv1.PodSpec{
		Containers: []*syncpodv1.Container{{Name: "c", Image: "busybox"}}}}
	if static {
		p.Annotations = map[string]string{manifest.SourceAnnotation: manifest.SourceFile}
	}
	return p
}

// Run brings the store in line with the directory: its pods applied, the
// static pods whose manifest vanished while the planner was down deleted,
// pods from other sources left alone; it ends without error with ctx.
func TestRunAppliesTheDirectoryAndDeletesVanishedStaticPods(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, p := range []*syncpodv1.Pod{pod("vanished", true), pod("users", false)} {
		if _, _, err := e.store.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	e.write(t, "web.yaml", "web")

	rctx, cancel := context.WithCancel(ctx)
	sub, err := e.store.Subscribe(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	done := make(chan error, 1)
	go func() { done <- e.r.Run(rctx) }()
	// Wait for the vanished pod's deletion: the last write of the first pass.
	for deleted := false; !deleted; {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		evs, err := sub.Next(wctx)
		wcancel()
		if err != nil {
			t.Fatalf("no deletion of the vanished static pod: %v", err)
		}
		for _, ev := range evs {
			p := ev.GetRecord().GetPod()
			deleted = deleted || p.GetName() == "vanished" && p.GetDeletionTime() != nil
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil when ctx ends", err)
	}
	if web := e.get(t, "web").GetPod(); web.GetAnnotations()[manifest.SourceAnnotation] != manifest.SourceFile || web.GetDeletionTime() != nil {
		t.Errorf("web = %v, want applied as a static pod", web)
	}
	if e.get(t, "users").GetPod().GetDeletionTime() != nil {
		t.Error("a pod from the API was deleted by the static source")
	}
}

// Removed manifests delete their pods; changes that may succeed later
// (a pod re-added while its old incarnation terminates) are given back
// for the next scan, invalid pods and already-gone pods are not.
func TestApplyRetriesOnlyWhatMaySucceedLater(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, p := range []*syncpodv1.Pod{pod("going", true), pod("terminating", true)} {
		if _, _, err := e.store.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.store.MarkDeleted(ctx, &plannerv1.PodRef{Namespace: "default", Name: "terminating"}, nil); err != nil {
		t.Fatal(err)
	}
	invalid := pod("bad", true)
	invalid.Spec.Containers[0].Name = "Not_A_Label"
	d := manifest.Diff{Changes: []manifest.Change{
		{Type: manifest.Added, File: "bad.yaml", Pod: invalid},
		{Type: manifest.Removed, File: "going.yaml", Pod: pod("going", true)},
		{Type: manifest.Removed, File: "never.yaml", Pod: pod("never-stored", true)},
		{Type: manifest.Added, File: "terminating.yaml", Pod: pod("terminating", true)},
	}}
	retry := e.r.Apply(ctx, d)
	if len(retry) != 1 || retry[0].Pod.GetName() != "terminating" {
		t.Errorf("retry = %v, want only the pod re-added while terminating", retry)
	}
	if e.get(t, "going").GetPod().GetDeletionTime() == nil {
		t.Error("the pod of a removed manifest was not deleted")
	}
	if _, err := e.store.Get(ctx, &plannerv1.PodRef{Namespace: "default", Name: "bad"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("invalid pod: Get = %v, want not stored", err)
	}
}

// A broken manifest leaves the pods it kept as they were, with a Warning
// event saying so.
func TestBrokenManifestLeavesAWarningEventOnItsPods(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	stored, _, err := e.store.Apply(ctx, pod("web", true))
	if err != nil {
		t.Fatal(err)
	}
	d := manifest.Diff{Errors: []manifest.FileError{{File: "web.yaml", Err: errors.New("line 3: bad indentation"), Kept: []*syncpodv1.Pod{pod("web", true)}}}}
	if retry := e.r.Apply(ctx, d); len(retry) != 0 {
		t.Errorf("retry = %v, want none", retry)
	}
	rec := e.get(t, "web")
	if rec.GetPod().GetGeneration() != stored.GetGeneration() || rec.GetPod().GetDeletionTime() != nil {
		t.Errorf("the kept pod changed: %v", rec.GetPod())
	}
	evs := rec.GetEvents()
	if len(evs) != 1 || evs[0].GetReason() != ReasonFailedStaticManifest || evs[0].GetType() != syncpodv1.EventType_EVENT_TYPE_WARNING ||
		!evs[0].GetLastTime().AsTime().Equal(t0) {
		t.Errorf("events = %v, want one Warning %s at the injected time", evs, ReasonFailedStaticManifest)
	}
}
