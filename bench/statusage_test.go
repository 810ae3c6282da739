package bench

import (
	"context"
	"math"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
)

// TestStatusAgesRunFromTheRuntimesChangeToTheWatch: a start's age ends at
// the first event showing the pod started, or, for a pod never shown
// started, at the first showing it stopped or deleted; an exit's at the
// first showing a container no longer running, or deleted; a change the
// watch never showed is not counted without an end, and counted until
// the end with one; an age below 0 is 0.
func TestStatusAgesRunFromTheRuntimesChangeToTheWatch(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := NewPodTracker()
	observeAll(t, tr, []watchLine{
		{podEvent("ADDED", "a", "Pending", "waiting"), at(0)},
		{podEvent("MODIFIED", "a", "Running", "running"), at(1500)},
		{podEvent("MODIFIED", "a", "Running", "waiting"), at(5200)},
		{podEvent("DELETED", "a", "Running", "waiting"), at(6000)},
		{podEvent("ADDED", "b", "Pending", "waiting"), at(0)},
		{podEvent("DELETED", "b", "Pending", "waiting"), at(3000)},
		{podEvent("ADDED", "c", "Running", "running"), at(900)},
		{podEvent("ADDED", "d", "Running", "running"), at(100)},
	})
	if got, ok := tr.Stopped("a"); !ok || !got.Equal(at(5200)) {
		t.Errorf("a stopped at %v (%v), want the first event after its start with its container not running", got, ok)
	}
	if _, ok := tr.Stopped("b"); ok {
		t.Error("b stopped without having started")
	}
	started := map[string]time.Time{"a": at(1000), "b": at(2000), "c": at(1000), "e": at(1000)}
	finished := map[string]time.Time{"a": at(5000), "c": at(4000)}
	got, unseen := StatusAges([]string{"a", "b", "c", "d", "e"}, started, finished, tr, time.Time{})
	// a: 0.5 s to its start shown, 0.2 s to its exit shown; b: 1 s
	// until it was deleted, never shown started; c: shown before the
	// runtime's start (0), its exit never shown; d: no runtime record;
	// e: never seen by the watch.
	want := Sample{0.5, 0.2, 1, 0}
	sameAges(t, got, want)
	if unseen != 0 {
		t.Errorf("%d unseen without an end", unseen)
	}
	// With an end at 8 s: c's exit (4 s) and e's start (1 s) were never
	// shown, 4 s and 7 s old then.
	got, unseen = StatusAges([]string{"a", "b", "c", "d", "e"}, started, finished, tr, at(8000))
	sameAges(t, got, Sample{0.5, 0.2, 1, 0, 4, 7})
	if unseen != 2 {
		t.Errorf("%d unseen, want 2 (c's exit, e's start)", unseen)
	}
}

func sameAges(t *testing.T, got, want Sample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("ages %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("ages %v, want %v", got, want)
			return
		}
	}
}

// TestRuntimeTruthTakesTheRuntimesTimes: the start and exit of a pod's
// container are the runtime's own; an exit not seen before the container
// was removed is the look that missed it, and counted; other names are
// left alone.
func TestRuntimeTruthTakesTheRuntimesTimes(t *testing.T) {
	ctx := context.Background()
	fake := critest.NewRuntime()
	rt := &Runtime{RS: fake, IS: critest.NewImages("img")}
	start := func(name string) (string, string) {
		t.Helper()
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Uid: name, Namespace: "default"}}
		sb, err := fake.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		id, err := fake.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
			Image: &runtimeapi.ImageSpec{Image: "img"}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := fake.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		return sb, id
	}
	_, a := start("run-a")
	sbB, b := start("run-b")
	start("other-c")
	truth := &RuntimeTruth{started: map[string]time.Time{}, finished: map[string]time.Time{}, ids: map[string]string{}}
	truth.look(ctx, rt, "run-")
	if err := fake.StopContainer(ctx, a, 0); err != nil {
		t.Fatal(err)
	}
	if err := fake.StopContainer(ctx, b, 0); err != nil {
		t.Fatal(err)
	}
	if err := fake.RemoveContainer(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := fake.RemovePodSandbox(ctx, sbB); err != nil {
		t.Fatal(err)
	}
	truth.look(ctx, rt, "run-")
	started, finished, missed := truth.Times()
	stA, err := fake.ContainerStatus(ctx, a, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := started["run-a"]; !got.Equal(time.Unix(0, stA.GetStatus().GetStartedAt())) {
		t.Errorf("a started %v, want the runtime's %v", got, time.Unix(0, stA.GetStatus().GetStartedAt()))
	}
	if got := finished["run-a"]; !got.Equal(time.Unix(0, stA.GetStatus().GetFinishedAt())) {
		t.Errorf("a finished %v, want the runtime's %v", got, time.Unix(0, stA.GetStatus().GetFinishedAt()))
	}
	if _, ok := finished["run-b"]; !ok || missed != 1 {
		t.Errorf("b finished %v, %d missed: want its exit taken at the look that missed it", ok, missed)
	}
	if _, ok := started["other-c"]; ok || len(started) != 2 {
		t.Errorf("started %v, want run-a and run-b only", started)
	}
}

// TestChurnStatusAgesSplitStartsFromExits: the churn's status ages of
// its pods' starts and of the exits are apart, an unseen change of
// either counted until the end.
func TestChurnStatusAgesSplitStartsFromExits(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := NewPodTracker()
	observeAll(t, tr, []watchLine{
		{podEvent("MODIFIED", "c", "Running", "running"), at(1500)},
		{podEvent("DELETED", "old", "Running", "running"), at(2300)},
	})
	truth := &RuntimeTruth{
		started:  map[string]time.Time{"c": at(1000), "d": at(1000), "old": at(-9000)},
		finished: map[string]time.Time{"old": at(2000)},
		ids:      map[string]string{}, missed: 1,
	}
	w := &PodWatch{tracker: tr}
	starts, exits, missed, unseen := w.statusAges([]string{"c", "d"}, []string{"old"}, truth, at(4000))
	// c started 0.5 s before shown; d never shown (3 s until the end);
	// old's start is not the churn's; its exit shown 0.3 s late.
	sameAges(t, starts, Sample{0.5, 3})
	sameAges(t, exits, Sample{0.3})
	if missed != 1 || unseen != 1 {
		t.Errorf("missed %d, unseen %d: want 1 and 1", missed, unseen)
	}
}
