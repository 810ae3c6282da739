package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/syncpod/syncpod/internal/periodic"
)

// A service's heap grows in a burst (fifty pods applied at once, a relist
// of thousands of containers) and Go gives the freed part back to the
// kernel only slowly: its scavenger keeps what the last collection's goal
// allowed, and an idle process collects only every two minutes. So a node
// agent that handled one burst held that memory long after. memReleaser
// returns it once the burst is over: when a spell of allocation is followed
// by a quiet interval, it runs debug.FreeOSMemory once (a collection and a
// full scavenge, a few ms for these heaps). Steady work and idle time cost
// nothing: it acts at most once per busy spell.
type memReleaser struct {
	// read samples the runtime; release frees (debug.FreeOSMemory).
	read    func() memSample
	release func()
	log     *slog.Logger
	// quiet is the most an interval may allocate and still count as
	// quiet; busy is what must have been allocated since the last release
	// (or the start) for a spell to have been busy; worth is the least
	// free heap worth giving back.
	quiet, busy, worth uint64

	prev, since memSample
}

// memSample is what memReleaser reads of the runtime: bytes allocated on
// the heap since the process began, and heap memory held from the kernel
// that a collection would leave free: free spans, and objects the last
// collection did not find live (garbage since).
type memSample struct {
	allocs, free uint64
}

// An idle node agent still allocates a little: a relist every second, a
// Prometheus scrape, the periodic resyncs (100-300 KiB a second each, with
// 10 pods). A quiet interval allocates less than 1 MiB in 5 s (or less
// than a quarter of the free heap held); a busy spell 8 MiB or more.
const (
	releaseEvery = 5 * time.Second
	releaseQuiet = 1 << 20
	releaseBusy  = 8 << 20
	releaseWorth = 2 << 20
)

func newMemReleaser(log *slog.Logger) *memReleaser {
	r := newMemReader()
	m := &memReleaser{read: r.read, release: debug.FreeOSMemory, log: log,
		quiet: releaseQuiet, busy: releaseBusy, worth: releaseWorth}
	m.prev = m.read()
	m.since = m.prev
	return m
}

var memMetrics = [...]string{
	"/gc/heap/allocs:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
}

// memReader reads memMetrics into samples it keeps, so a look at the
// runtime allocates nothing.
type memReader struct {
	s []metrics.Sample
}

func newMemReader() *memReader {
	r := &memReader{s: make([]metrics.Sample, len(memMetrics))}
	for i, n := range memMetrics {
		r.s[i].Name = n
	}
	return r
}

func (r *memReader) read() memSample {
	metrics.Read(r.s)
	var v [len(memMetrics)]uint64
	for i := range r.s {
		if r.s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = r.s[i].Value.Uint64()
		}
	}
	out := memSample{allocs: v[0], free: v[1]}
	if v[2] > v[3] {
		out.free += v[2] - v[3]
	}
	return out
}

// tick looks at the runtime once and releases when a busy spell has just
// gone quiet with enough free heap held; it reports whether it released.
func (m *memReleaser) tick() bool {
	cur := m.read()
	prev := m.prev
	m.prev = cur
	// Quiet: under m.quiet, or under a quarter of the free heap held (at
	// that rate the held memory would wait more than four intervals to be
	// used again; a PLEG that relists every second allocates 1-2 MiB in
	// 5 s with nothing happening).
	if step := cur.allocs - prev.allocs; step > max(m.quiet, cur.free/4) || cur.allocs-m.since.allocs < m.busy {
		return false
	}
	// Quiet after a busy spell: this spell is settled either way.
	m.since = cur
	if cur.free < m.worth {
		return false
	}
	m.release()
	after := m.read()
	m.prev, m.since = after, after
	m.log.Debug("returned free heap memory to the kernel after a busy spell",
		"free_before_bytes", cur.free, "free_after_bytes", after.free)
	return true
}

// heapShare runs one memReleaser for all the Servers of a process,
// however many (syncpod-all runs hundreds): the heap is the process's, so
// one look every releaseEvery serves them all, where one each would read
// the same numbers and collect the same heap once per server. The first
// Server to run starts it and the last to stop ends it.
type heapShare struct {
	sync.Mutex
	users int
	stop  context.CancelFunc
}

// processHeap is the process's heapShare, the one piece of state the
// Servers of a process share.
var processHeap heapShare

// shareMemReleaser makes sure the process's memReleaser runs (logging to
// log when this call starts it) until the returned func has been called
// as often as shareMemReleaser.
func shareMemReleaser(log *slog.Logger) (done func()) { return processHeap.share(log) }

func (h *heapShare) share(log *slog.Logger) (done func()) {
	h.Lock()
	defer h.Unlock()
	if h.users == 0 {
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		mem := newMemReleaser(log)
		go func() {
			defer close(stopped)
			periodic.Run(ctx, releaseEvery, func() { mem.tick() })
		}()
		h.stop = func() { cancel(); <-stopped }
	}
	h.users++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.Lock()
			defer h.Unlock()
			if h.users--; h.users == 0 {
				h.stop()
				h.stop = nil
			}
		})
	}
}
