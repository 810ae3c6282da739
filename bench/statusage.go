package bench

import (
	"context"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StatusAgePoll is how often the runtime is looked at for the status
// age: the start and exit times come from the runtime's own records
// (ContainerStatus), so the poll only bounds a container removed between
// two looks, whose exit is then taken as the look that missed it.
const StatusAgePoll = 250 * time.Millisecond

// RuntimeTruth is what the runtime said of the pods of one name prefix
// while it was followed: when each pod's container started and when that
// container exited, by the runtime's clock.
type RuntimeTruth struct {
	mu       sync.Mutex
	started  map[string]time.Time // pod name → its container's start
	finished map[string]time.Time // pod name → that container's exit
	ids      map[string]string    // pod name → the container started
	// missed counts the exits taken as the look that no longer listed
	// the container (removed before a look saw it exited).
	missed int
}

// FollowTruth looks at the runtime every poll until ctx ends, for the
// sandboxes whose name begins with prefix (one container each, as the
// density pods have).
func (r *Runtime) FollowTruth(ctx context.Context, prefix string, poll time.Duration) *RuntimeTruth {
	t := &RuntimeTruth{started: map[string]time.Time{}, finished: map[string]time.Time{}, ids: map[string]string{}}
	go func() {
		for {
			t.look(ctx, r, prefix)
			if sleep(ctx, poll) != nil {
				return
			}
		}
	}()
	return t
}

// look lists the runtime once and records the starts and exits not yet
// known.
func (t *RuntimeTruth) look(ctx context.Context, r *Runtime, prefix string) {
	s, err := r.snapshot(ctx)
	if err != nil {
		return // the next look tries again
	}
	at := time.Now()
	listed := map[string]bool{}
	for name, cs := range s.containers {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		t.mu.Lock()
		id, started := t.ids[name]
		_, finished := t.finished[name]
		t.mu.Unlock()
		for _, c := range cs {
			listed[c.GetId()] = true
			switch {
			case !started && c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING:
				st, err := r.RS.ContainerStatus(ctx, c.GetId(), false)
				if err != nil || st.GetStatus().GetStartedAt() == 0 {
					continue
				}
				t.mu.Lock()
				t.ids[name], t.started[name] = c.GetId(), time.Unix(0, st.GetStatus().GetStartedAt())
				t.mu.Unlock()
				started, id = true, c.GetId()
				if st.GetStatus().GetFinishedAt() != 0 {
					t.mu.Lock()
					t.finished[name] = time.Unix(0, st.GetStatus().GetFinishedAt())
					t.mu.Unlock()
					finished = true
				}
			case started && !finished && c.GetId() == id && c.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED:
				st, err := r.RS.ContainerStatus(ctx, c.GetId(), false)
				if err != nil || st.GetStatus().GetFinishedAt() == 0 {
					continue
				}
				t.mu.Lock()
				t.finished[name] = time.Unix(0, st.GetStatus().GetFinishedAt())
				t.mu.Unlock()
				finished = true
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, id := range t.ids {
		if _, ok := t.finished[name]; !ok && !listed[id] {
			t.finished[name] = at
			t.missed++
		}
	}
}

// Times is a copy of what was recorded: each pod's start and exit, and
// how many exits are the look that missed the container.
func (t *RuntimeTruth) Times() (started, finished map[string]time.Time, missed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	started, finished = make(map[string]time.Time, len(t.started)), make(map[string]time.Time, len(t.finished))
	for k, v := range t.started {
		started[k] = v
	}
	for k, v := range t.finished {
		finished[k] = v
	}
	return started, finished, t.missed
}

// StatusAges are the ages the API server's pod status reached behind the
// runtime's truth, in seconds: for each pod of names the runtime saw
// start, from its container's start (the runtime's clock) to the first
// watch event showing the pod started (or, if none did, showing it
// stopped or deleted: the status never caught up before it was moot);
// for each whose container exited, from the exit to the first event
// showing a container no longer running, or the pod deleted. A change
// the watch never showed counts until end, the time the caller stopped
// waiting for it (a lower bound of its age; unseen counts those), or not
// at all with end zero. Negative ages (the watch ahead of a coarse
// runtime timestamp) count as 0.
func StatusAges(names []string, rtStarted, rtFinished map[string]time.Time, t *PodTracker, end time.Time) (ages Sample, unseen int) {
	age := func(from time.Time, seen ...time.Time) {
		var first time.Time
		for _, s := range seen {
			if !s.IsZero() && (first.IsZero() || s.Before(first)) {
				first = s
			}
		}
		if first.IsZero() {
			if end.IsZero() {
				return
			}
			first = end
			unseen++
		}
		ages = append(ages, max(first.Sub(from).Seconds(), 0))
	}
	for _, n := range names {
		started, _ := t.Started(n)
		stopped, _ := t.Stopped(n)
		gone, _ := t.Gone(n)
		if at, ok := rtStarted[n]; ok {
			if !started.IsZero() {
				age(at, started)
			} else {
				age(at, stopped, gone)
			}
		}
		if at, ok := rtFinished[n]; ok {
			age(at, stopped, gone)
		}
	}
	return ages, unseen
}
