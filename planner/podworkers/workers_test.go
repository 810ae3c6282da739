package podworkers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is a SyncFunc that records when each pod was synced.
type recorder struct {
	mu      sync.Mutex
	calls   map[string][]time.Time
	active  map[string]int
	maxSeen map[string]int
	block   chan struct{} // when non-nil, each sync waits on it
	result  func(uid string, n int) (time.Time, error)
}

func newRecorder() *recorder {
	return &recorder{calls: map[string][]time.Time{}, active: map[string]int{}, maxSeen: map[string]int{}}
}

func (r *recorder) sync(ctx context.Context, uid string, _ *Slot) (time.Time, error) {
	r.mu.Lock()
	r.calls[uid] = append(r.calls[uid], time.Now())
	n := len(r.calls[uid])
	r.active[uid]++
	r.maxSeen[uid] = max(r.maxSeen[uid], r.active[uid])
	block := r.block
	r.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
		}
	}
	r.mu.Lock()
	r.active[uid]--
	r.mu.Unlock()
	if r.result != nil {
		return r.result(uid, n)
	}
	return time.Time{}, nil
}

func (r *recorder) count(uid string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls[uid])
}

func (r *recorder) times(uid string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.calls[uid]...)
}

// run starts w in the bubble and returns a stop function that waits for Run.
func run(t *testing.T, w *Workers) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func TestTriggersWhileRunningCoalesceIntoOneFollowUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.block = make(chan struct{})
		w := New(r.sync, Options{})
		stop := run(t, w)
		defer stop()

		w.Trigger("a")
		synctest.Wait()
		if got := r.count("a"); got != 1 {
			t.Fatalf("syncs after first trigger = %d, want 1", got)
		}
		for range 5 {
			w.Trigger("a")
		}
		synctest.Wait()
		if got := r.count("a"); got != 1 {
			t.Fatalf("a second sync started while the first ran: %d", got)
		}
		close(r.block)
		synctest.Wait()
		if got := r.count("a"); got != 2 {
			t.Fatalf("syncs = %d, want 2 (one coalesced follow-up)", got)
		}
		if r.maxSeen["a"] != 1 {
			t.Fatalf("%d syncs of one pod ran at once", r.maxSeen["a"])
		}
	})
}

func TestDifferentPodsRunInParallelUpToTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.block = make(chan struct{})
		w := New(r.sync, Options{MaxConcurrent: 2})
		stop := run(t, w)
		defer stop()
		for _, uid := range []string{"a", "b", "c"} {
			w.Trigger(uid)
		}
		synctest.Wait()
		started := r.count("a") + r.count("b") + r.count("c")
		if started != 2 {
			t.Fatalf("%d syncs started at once, want the bound 2", started)
		}
		close(r.block)
		synctest.Wait()
		if got := r.count("a") + r.count("b") + r.count("c"); got != 3 {
			t.Fatalf("syncs = %d, want 3", got)
		}
	})
}

func TestTriggerAtFiresAtTheExactInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		w := New(r.sync, Options{})
		stop := run(t, w)
		defer stop()
		start := time.Now()
		w.TriggerAt("a", start.Add(10*time.Second))
		w.TriggerAt("a", start.Add(30*time.Second)) // later: ignored
		w.TriggerAt("a", start.Add(7*time.Second))  // earlier: wins
		if got := w.NextWake("a"); !got.Equal(start.Add(7 * time.Second)) {
			t.Fatalf("NextWake = %v, want start+7s", got.Sub(start))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		times := r.times("a")
		if len(times) != 1 || !times[0].Equal(start.Add(7*time.Second)) {
			t.Fatalf("syncs at %v, want exactly one at +7s", offsets(start, times))
		}
	})
}

func TestSyncResultWakeAtSchedulesTheNextSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		start := time.Now()
		// The first sync reports a back-off ending at +20s; later ones nothing.
		r.result = func(uid string, n int) (time.Time, error) {
			if n == 1 {
				return start.Add(20 * time.Second), nil
			}
			return time.Time{}, nil
		}
		w := New(r.sync, Options{})
		stop := run(t, w)
		defer stop()
		w.Trigger("a")
		time.Sleep(time.Minute)
		synctest.Wait()
		got := offsets(start, r.times("a"))
		want := []time.Duration{0, 20 * time.Second}
		if !slices.Equal(got, want) {
			t.Fatalf("syncs at %v, want %v", got, want)
		}
	})
}

func TestFailedSyncsBackOffExponentiallyAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.result = func(uid string, n int) (time.Time, error) {
			if n <= 6 {
				return time.Time{}, errors.New("executor unavailable")
			}
			return time.Time{}, nil
		}
		w := New(r.sync, Options{ErrorBackoffInitial: time.Second, ErrorBackoffMax: 8 * time.Second})
		stop := run(t, w)
		defer stop()
		start := time.Now()
		w.Trigger("a")
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		// Retries after 1, 2, 4, 8, 8, 8 s; the 7th sync succeeds and
		// nothing follows it: no spinning.
		want := []time.Duration{0, 1, 3, 7, 15, 23, 31}
		for i := range want {
			want[i] *= time.Second
		}
		if got := offsets(start, r.times("a")); !slices.Equal(got, want) {
			t.Fatalf("syncs at %v, want %v", got, want)
		}
		// After a success the back-off starts from the initial delay again.
		r.result = func(uid string, n int) (time.Time, error) { return time.Time{}, errors.New("again") }
		restart := time.Now()
		w.Trigger("a")
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if got := offsets(restart, r.times("a")[7:]); !slices.Equal(got, []time.Duration{0, time.Second}) {
			t.Fatalf("after reset syncs at %v, want [0s 1s]", got)
		}
	})
}

func TestForgetStopsTimersAndFollowUps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		w := New(r.sync, Options{})
		stop := run(t, w)
		defer stop()
		w.TriggerAt("a", time.Now().Add(time.Second))
		w.Forget("a")
		time.Sleep(time.Minute)
		synctest.Wait()
		if r.count("a") != 0 {
			t.Fatalf("forgotten pod synced %d times", r.count("a"))
		}
		if w.Known() != 0 {
			t.Fatalf("Known = %d after Forget", w.Known())
		}
	})
}

func TestTriggersBeforeRunAreKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		w := New(r.sync, Options{})
		w.Trigger("a")
		stop := run(t, w)
		defer stop()
		synctest.Wait()
		if r.count("a") != 1 {
			t.Fatalf("trigger before Run: %d syncs, want 1", r.count("a"))
		}
	})
}

func TestRunStopsCancelsSyncsAndTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.block = make(chan struct{}) // never closed: only ctx ends the sync
		w := New(r.sync, Options{})
		stop := run(t, w)
		w.Trigger("a")
		w.TriggerAt("b", time.Now().Add(time.Hour))
		synctest.Wait()
		stop() // returns only once the running sync saw its ctx end
		w.Trigger("a")
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if r.count("a") != 1 || r.count("b") != 0 {
			t.Fatalf("after stop: a=%d b=%d syncs, want 1 and 0", r.count("a"), r.count("b"))
		}
	})
}

func offsets(start time.Time, ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(start)
	}
	return out
}

// TestReleasedSlotsLetOtherPodsRun: syncs that release their slot (pod
// kills waiting out a grace period) no longer count toward the bound, so
// more pods than MaxConcurrent are all in their waits at once; a second
// release is a no-op and the bound still holds for the rest.
func TestReleasedSlotsLetOtherPodsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		waiting := 0
		grace := make(chan struct{})
		w := New(func(ctx context.Context, uid string, slot *Slot) (time.Time, error) {
			slot.Release()
			slot.Release() // idempotent: must not free a second slot
			mu.Lock()
			waiting++
			mu.Unlock()
			select {
			case <-grace:
			case <-ctx.Done():
			}
			return time.Time{}, nil
		}, Options{MaxConcurrent: 2})
		stop := run(t, w)
		defer stop()
		const pods = 7
		for i := range pods {
			w.Trigger(string(rune('a' + i)))
		}
		synctest.Wait()
		mu.Lock()
		got := waiting
		mu.Unlock()
		if got != pods {
			t.Fatalf("%d syncs in their grace wait at once, want all %d (bound 2 released)", got, pods)
		}
		close(grace)
		synctest.Wait()
		if n := len(w.sem); n != 0 {
			t.Fatalf("%d slots still held after every sync ended", n)
		}
	})
}

// TestReleasingANilSlotIsANoOp: a sync run outside the workers has no
// slot, and releasing it frees none of the workers'.
func TestReleasingANilSlotIsANoOp(t *testing.T) {
	w := New(func(context.Context, string, *Slot) (time.Time, error) { return time.Time{}, nil }, Options{MaxConcurrent: 1})
	w.sem <- struct{}{}
	var none *Slot
	none.Release()
	if len(w.sem) != 1 {
		t.Fatal("releasing a nil Slot freed a slot it did not hold")
	}
}

func TestEachPodIsResyncedOnItsOwnAfterItsLastSync_R11_7(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		w := New(r.sync, Options{Resync: time.Minute})
		stop := run(t, w)
		defer stop()
		start := time.Now()
		const pods = 50
		uids := make([]string, pods)
		for i := range uids {
			uids[i] = fmt.Sprintf("pod-%02d", i)
			w.Trigger(uids[i])
		}
		// Every pod synced at +0; each is due again between 60 and 90 s
		// after that sync (the kubelet's wait.Jitter(resync, 0.5)), each
		// at its own instant, so they do not come all at once.
		time.Sleep(95 * time.Second)
		synctest.Wait()
		instants := map[time.Duration]bool{}
		for _, uid := range uids {
			got := offsets(start, r.times(uid))
			if len(got) != 2 || got[0] != 0 || got[1] < time.Minute || got[1] > 90*time.Second {
				t.Fatalf("%s synced at %v, want at 0 and once in [60s, 90s]", uid, got)
			}
			instants[got[1]] = true
		}
		if len(instants) < pods*9/10 {
			t.Fatalf("the %d pods' resyncs fell on %d instants: they come together, not each on its own", pods, len(instants))
		}
		// And again, each measured from the pod's own previous sync. By
		// +185 s a pod resynced early twice (at +60 s and +120 s) has had
		// a fourth sync at +180 s already, so every gap is checked, and
		// the last sync must be no more than 90 s old.
		time.Sleep(90 * time.Second)
		synctest.Wait()
		now := time.Since(start)
		for _, uid := range uids {
			got := offsets(start, r.times(uid))
			if len(got) < 3 || now-got[len(got)-1] > 90*time.Second {
				t.Fatalf("%s synced at %v, by +%v want a sync 60-90 s after each sync", uid, got, now)
			}
			for i := 2; i < len(got); i++ {
				if gap := got[i] - got[i-1]; gap < time.Minute || gap > 90*time.Second {
					t.Fatalf("%s synced at %v: %v between syncs %d and %d, want 60-90 s", uid, got, gap, i-1, i)
				}
			}
		}
	})
}

func TestASyncForAnyReasonMovesTheResyncOn_R11_7(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		var mu sync.Mutex
		var resyncs []time.Duration
		resynced := func() []time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(resyncs)
		}
		start := time.Now()
		w := New(r.sync, Options{Resync: time.Minute, OnResync: func(uid string) {
			mu.Lock()
			defer mu.Unlock()
			resyncs = append(resyncs, time.Since(start))
		}})
		stop := run(t, w)
		defer stop()
		w.Trigger("a")
		time.Sleep(50 * time.Second)
		w.Trigger("a") // an event: the resync due at 60-90 s moves to 110-140 s
		time.Sleep(55 * time.Second)
		synctest.Wait()
		if got := offsets(start, r.times("a")); !slices.Equal(got, []time.Duration{0, 50 * time.Second}) {
			t.Fatalf("syncs at %v by +105s, want [0s 50s]: the resync armed by the first sync was not moved on", got)
		}
		if got := resynced(); len(got) != 0 {
			t.Fatalf("OnResync called at %v for triggered syncs", got)
		}
		time.Sleep(40 * time.Second)
		synctest.Wait()
		got := offsets(start, r.times("a"))
		if len(got) != 3 || got[2] < 110*time.Second || got[2] > 140*time.Second {
			t.Fatalf("syncs at %v, want a third in [110s, 140s]", got)
		}
		if rs := resynced(); len(rs) != 1 || rs[0] != got[2] {
			t.Fatalf("OnResync at %v, want once, at the resync's sync %v", rs, got[2])
		}
	})
}

func TestForgetAndStopEndTheResync_R11_7(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		w := New(r.sync, Options{Resync: time.Minute})
		stop := run(t, w)
		w.Trigger("a")
		w.Trigger("b")
		synctest.Wait()
		w.Forget("a")
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if n := r.count("a"); n != 1 {
			t.Fatalf("forgotten pod synced %d times, want 1 (before Forget)", n)
		}
		if n := r.count("b"); n < 2 {
			t.Fatalf("pod b synced %d times in 2 min, want its resync too", n)
		}
		stop()
		n := r.count("b")
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if r.count("b") != n {
			t.Fatalf("pod b synced after Run returned")
		}
	})
}
