package podworkers

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// SyncFunc syncs one pod, holding slot, its place among the
// MaxConcurrent syncs running at once, until it returns or releases it
// (Slot.Release). It returns the instant the pod should next be synced
// (zero for "no wish"), or an error, which schedules a retry with the
// pod's error back-off.
type SyncFunc func(ctx context.Context, uid string, slot *Slot) (wakeAt time.Time, err error)

// Options tune the workers.
type Options struct {
	// ErrorBackoffInitial is the first retry delay after a failed sync
	// (default 1 s); it doubles per consecutive failure.
	ErrorBackoffInitial time.Duration
	// ErrorBackoffMax caps the retry delay (default 1 min).
	ErrorBackoffMax time.Duration
	// MaxConcurrent bounds syncs running at once across pods (default
	// DefaultMaxConcurrent); a sync leaves the bound early with
	// Slot.Release.
	MaxConcurrent int
	// Logger receives sync errors. Default: discard.
	Logger *slog.Logger
	// Observe, when set, is called after every sync with its outcome (for
	// metrics).
	Observe func(uid string, took time.Duration, err error)
	// Resync, when positive, syncs each pod again this long after its
	// last sync ended, plus a random part of up to half as much again:
	// the kubelet's pod workers requeue a pod after each of its syncs,
	// one pod at a time, never all at once. A pod's next sync
	// for any other reason moves its resync on.
	Resync time.Duration
	// OnResync, when set, is called as a pod's resync comes due, just
	// before its sync is asked for. It runs with the workers' lock held
	// and must not call back into the workers.
	OnResync func(uid string)
}

// DefaultMaxConcurrent is the default bound of syncs running at once, as
// many as the executor creates and starts pods at once (its
// DefaultMaxParallelPods, which says why so many).
const DefaultMaxConcurrent = 64

func (o *Options) defaults() {
	if o.ErrorBackoffInitial <= 0 {
		o.ErrorBackoffInitial = time.Second
	}
	if o.ErrorBackoffMax < o.ErrorBackoffInitial {
		o.ErrorBackoffMax = max(time.Minute, o.ErrorBackoffInitial)
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Workers dispatches syncs per pod. Create with New and start with Run.
type Workers struct {
	sync SyncFunc
	opts Options
	sem  chan struct{}

	mu      sync.Mutex
	ctx     context.Context // nil until Run; set once
	stopped bool            // Run has returned or is returning
	pods    map[string]*pod
	pending map[string]bool // pods triggered before Run
	wg      sync.WaitGroup
}

type pod struct {
	running  bool // a sync goroutine owns the pod
	again    bool // another sync was asked for while running
	failures int  // consecutive failed syncs
	timer    *time.Timer
	wakeAt   time.Time // instant the timer fires; zero when none
	gone     bool      // forgotten while running
	resync   *time.Timer
	resyncN  uint64 // counts the resyncs armed; a timer acts only if it is the latest
}

// New returns workers that call sync.
func New(sync SyncFunc, opts Options) *Workers {
	opts.defaults()
	return &Workers{
		sync:    sync,
		opts:    opts,
		sem:     make(chan struct{}, opts.MaxConcurrent),
		pods:    map[string]*pod{},
		pending: map[string]bool{},
	}
}

// Run dispatches syncs until ctx ends, then cancels running syncs, stops
// every timer and waits for the sync goroutines to return.
func (w *Workers) Run(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	for _, uid := range sortedKeys(w.pending) {
		w.triggerLocked(uid)
	}
	clear(w.pending)
	w.mu.Unlock()

	<-ctx.Done()

	w.mu.Lock()
	w.stopped = true
	for _, p := range w.pods {
		p.stopTimers()
	}
	w.mu.Unlock()
	w.wg.Wait()
	return nil
}

// Trigger asks for a sync of uid now. If a sync of uid is running, exactly
// one more sync follows it however many triggers arrive meanwhile.
func (w *Workers) Trigger(uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.triggerLocked(uid)
}

// TriggerAt asks for a sync of uid at an instant. Only the earliest
// requested instant is kept; an instant in the past triggers at once.
func (w *Workers) TriggerAt(uid string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wakeLocked(w.podLocked(uid), uid, at)
}

// Forget drops uid: its timer stops and no further sync starts for it
// (a running one finishes).
func (w *Workers) Forget(uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pods[uid]
	if !ok {
		return
	}
	p.stopTimers()
	if p.running {
		p.gone = true
		p.again = false
	}
	delete(w.pods, uid)
	delete(w.pending, uid)
}

// Known returns how many pods the workers hold state for.
func (w *Workers) Known() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pods)
}

// NextWake returns the instant uid's timer fires, zero when none.
func (w *Workers) NextWake(uid string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.pods[uid]; ok {
		return p.wakeAt
	}
	return time.Time{}
}

func (w *Workers) podLocked(uid string) *pod {
	p, ok := w.pods[uid]
	if !ok {
		p = &pod{}
		w.pods[uid] = p
	}
	return p
}

func (w *Workers) triggerLocked(uid string) {
	if w.stopped {
		return
	}
	p := w.podLocked(uid)
	if w.ctx == nil {
		w.pending[uid] = true
		return
	}
	if p.running {
		p.again = true
		return
	}
	p.running = true
	w.wg.Add(1)
	go w.loop(uid, p)
}

// wakeLocked arms p's timer for at, unless an earlier wake is armed.
func (w *Workers) wakeLocked(p *pod, uid string, at time.Time) {
	if w.stopped {
		return
	}
	if !p.wakeAt.IsZero() && !at.Before(p.wakeAt) {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.wakeAt = at
	p.timer = time.AfterFunc(time.Until(at), func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if cur, ok := w.pods[uid]; !ok || cur != p || !p.wakeAt.Equal(at) {
			return // forgotten or re-armed meanwhile
		}
		p.wakeAt = time.Time{}
		p.timer = nil
		w.triggerLocked(uid)
	})
}

// resyncLocked arms p's resync for Resync, plus up to half as much again
// at random, from now; an earlier resync armed is dropped.
func (w *Workers) resyncLocked(p *pod, uid string) {
	if w.opts.Resync <= 0 || w.stopped {
		return
	}
	if p.resync != nil {
		p.resync.Stop()
	}
	p.resyncN++
	n := p.resyncN
	d := w.opts.Resync + time.Duration(rand.Int64N(int64(w.opts.Resync)/2+1))
	p.resync = time.AfterFunc(d, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if cur, ok := w.pods[uid]; !ok || cur != p || p.resyncN != n || w.stopped {
			return // forgotten, stopped or re-armed meanwhile
		}
		p.resync = nil
		if w.opts.OnResync != nil {
			w.opts.OnResync(uid)
		}
		w.triggerLocked(uid)
	})
}

func (p *pod) stopTimers() {
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.resync != nil {
		p.resync.Stop()
	}
}

// loop runs syncs for one pod until no follow-up is wanted.
func (w *Workers) loop(uid string, p *pod) {
	defer w.wg.Done()
	ctx := w.ctx
	for {
		select {
		case w.sem <- struct{}{}:
		case <-ctx.Done():
			w.finish(p)
			return
		}
		start := time.Now()
		sl := &Slot{sem: w.sem}
		wakeAt, err := w.sync(ctx, uid, sl)
		took := time.Since(start)
		sl.Release()
		if w.opts.Observe != nil {
			w.opts.Observe(uid, took, err)
		}

		w.mu.Lock()
		if p.gone || w.stopped || ctx.Err() != nil {
			p.running = false
			w.mu.Unlock()
			return
		}
		if err != nil {
			p.failures++
			delay := w.backoff(p.failures)
			w.opts.Logger.Warn("pod sync failed", "pod_uid", uid, "err", err, "retry_in", delay.String(), "failures", p.failures)
			w.wakeLocked(p, uid, time.Now().Add(delay))
		} else {
			p.failures = 0
			if !wakeAt.IsZero() {
				w.wakeLocked(p, uid, wakeAt)
			}
		}
		w.resyncLocked(p, uid)
		if !p.again {
			p.running = false
			w.mu.Unlock()
			return
		}
		p.again = false
		w.mu.Unlock()
	}
}

// Slot is one of the MaxConcurrent places a running sync holds, handed
// to its SyncFunc.
type Slot struct {
	once sync.Once
	sem  chan struct{}
}

// Release gives back the place before the sync ends, for a sync about to
// wait on something that does not load the node (a pod's kill, which
// lasts up to its grace period): other pods' syncs then do not queue
// behind that wait. The pod itself stays owned by the sync; only the
// bound is released. A no-op after the first call, and on a nil Slot (a
// sync run outside the workers).
func (s *Slot) Release() {
	if s != nil {
		s.once.Do(func() { <-s.sem })
	}
}

func (w *Workers) finish(p *pod) {
	w.mu.Lock()
	p.running = false
	w.mu.Unlock()
}

// backoff is the retry delay after n consecutive failures.
func (w *Workers) backoff(n int) time.Duration {
	d := w.opts.ErrorBackoffInitial
	for i := 1; i < n && d < w.opts.ErrorBackoffMax; i++ {
		d *= 2
	}
	return min(d, w.opts.ErrorBackoffMax)
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
