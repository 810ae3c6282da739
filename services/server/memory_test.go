package server

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"testing"
)

// fakeHeap is the runtime as memReleaser sees it: the test allocates and
// frees by moving the numbers; release gives back every free byte.
type fakeHeap struct {
	memSample
	releases int
}

func (h *fakeHeap) releaser() *memReleaser {
	m := &memReleaser{read: func() memSample { return h.memSample }, release: func() { h.releases++; h.free = 0 },
		log: slog.New(slog.DiscardHandler), quiet: releaseQuiet, busy: releaseBusy, worth: releaseWorth}
	m.prev, m.since = h.memSample, h.memSample
	return m
}

// TestMemoryIsReturnedOnceABurstIsOver: a burst's memory goes back to the
// kernel at the first quiet interval after it, once, and not while the
// burst goes on.
func TestMemoryIsReturnedOnceABurstIsOver(t *testing.T) {
	h := &fakeHeap{}
	m := h.releaser()
	// A burst over two intervals: 40 MiB allocated, 20 MiB of it freed.
	h.allocs += 20 << 20
	if m.tick() {
		t.Fatal("released in the middle of a burst")
	}
	h.allocs += 20 << 20
	h.free = 20 << 20
	if m.tick() {
		t.Fatal("released in the middle of a burst")
	}
	// Quiet: a little allocation only.
	h.allocs += 100 << 10
	if !m.tick() || h.releases != 1 {
		t.Fatalf("not released at the first quiet interval after the burst (%d releases)", h.releases)
	}
	// Still quiet, and the collector frees some more: that is no new burst.
	h.allocs += 100 << 10
	h.free = 5 << 20
	for range 10 {
		if m.tick() {
			t.Fatal("released again with no burst since")
		}
	}
	// The next burst, then quiet: released again.
	h.allocs += 30 << 20
	h.free = 10 << 20
	m.tick()
	if !m.tick() || h.releases != 2 {
		t.Fatalf("the second burst's memory was not released (%d releases)", h.releases)
	}
}

// TestMemoryIsReturnedUnderAnIdleRelist: a service that keeps allocating
// a little when idle (a PLEG relisting every second: 1.5 MiB in 5 s) still
// gives back a burst's heap when it holds four times that free.
func TestMemoryIsReturnedUnderAnIdleRelist(t *testing.T) {
	h := &fakeHeap{}
	m := h.releaser()
	h.allocs += 40 << 20
	h.free = 5 << 20 // a quarter of it is under 1.5 MiB
	m.tick()
	h.allocs += 3 << 19
	if m.tick() {
		t.Fatal("released with 5 MiB free against 1.5 MiB allocated in an interval")
	}
	h = &fakeHeap{}
	m = h.releaser()
	h.allocs += 40 << 20
	h.free = 20 << 20
	m.tick()
	h.allocs += 3 << 19
	if !m.tick() || h.releases != 1 {
		t.Fatal("20 MiB held under a 1.5 MiB idle relist was not released")
	}
}

// TestMemoryReleaseLeavesSteadyWorkAndSmallHeapsAlone: steady allocation
// that reuses the held heap (never a quiet interval), a quiet spell after too little allocation, and
// a burst that left little free heap release nothing.
func TestMemoryReleaseLeavesSteadyWorkAndSmallHeapsAlone(t *testing.T) {
	h := &fakeHeap{}
	m := h.releaser()
	for range 20 {
		h.allocs += 10 << 20 // every interval uses a third of what is held
		h.free = 30 << 20
		if m.tick() {
			t.Fatal("released during steady work")
		}
	}

	h = &fakeHeap{memSample: memSample{free: 30 << 20}}
	m = h.releaser()
	h.allocs += 4 << 20 // less than a busy spell
	m.tick()
	if m.tick() {
		t.Fatal("released after a spell that was not busy")
	}

	h = &fakeHeap{}
	m = h.releaser()
	h.allocs += 40 << 20
	h.free = 1 << 20 // the collector kept little
	m.tick()
	if m.tick() {
		t.Fatal("released with less free heap than is worth it")
	}
	// That spell is settled: more free heap later is not released without a new burst.
	h.free = 10 << 20
	if m.tick() {
		t.Fatal("released with no burst since the last settled one")
	}
}

// readMemSample is one look at this process's runtime.
func readMemSample() memSample { return newMemReader().read() }

// TestMemoryReleaseOnTheRealRuntime: on the Go runtime itself, memory held
// after a burst of garbage is returned (the ticker loop around tick is
// internal/periodic's, tested there).
func TestMemoryReleaseOnTheRealRuntime(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(400)) // let the burst's garbage pile up as free heap
	m := newMemReleaser(slog.New(slog.DiscardHandler))
	var keep [][]byte
	for i := range 64 {
		b := make([]byte, 512<<10)
		b[0] = byte(i)
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
	keep = nil
	runtime.GC() // the burst's memory is now free heap, still held
	if held := readMemSample().free; held < releaseWorth {
		t.Skipf("the runtime kept only %d bytes of free heap after the burst; nothing to release", held)
	}
	before := readMemSample()
	m.prev = before
	if !m.tick() {
		t.Fatalf("not released after a 32 MiB burst (free heap %d bytes)", readMemSample().free)
	}
	if after := readMemSample().free; after > before.free/4 {
		t.Errorf("free heap held: %d bytes before the release, %d after", before.free, after)
	}

}

// The Servers of a process share one releaser: the first starts it, the
// last to stop ends it, and a Server's release counts once however often
// it is called.
func TestTheServersOfAProcessShareOneMemReleaser(t *testing.T) {
	// A share of its own: the process's counts the servers other tests
	// of the package run at the moment.
	var h heapShare
	users := func() (int, bool) {
		h.Lock()
		defer h.Unlock()
		return h.users, h.stop != nil
	}
	log := slog.New(slog.DiscardHandler)
	first := h.share(log)
	second := h.share(log)
	if n, running := users(); n != 2 || !running {
		t.Fatalf("two servers: %d users, running %v; want 2, running", n, running)
	}
	second()
	second()
	if n, running := users(); n != 1 || !running {
		t.Fatalf("one server left: %d users, running %v; want 1, running", n, running)
	}
	first()
	if n, running := users(); n != 0 || running {
		t.Fatalf("none left: %d users, running %v; want 0, stopped", n, running)
	}
}
