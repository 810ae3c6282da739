package backoff

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/syncpod/syncpod/internal/clocktest"
)

func newClock() *clocktest.Clock { return clocktest.New(clocktest.Start) }

func openT(t *testing.T, path string, cfg Config) *Store {
	t.Helper()
	s, err := Open(path, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var key = Key{PodUID: "uid-1", ContainerName: "web", SpecHash: "h1"}

// crashLoop simulates a container that crashes right after every start and
// returns the waits between an exit and the allowed restart.
func crashLoop(t *testing.T, s *Store, c *clocktest.Clock, n int) []time.Duration {
	t.Helper()
	var waits []time.Duration
	for range n {
		exit := c.Now()
		res, err := s.Check(key, PodRef{}, exit)
		if err != nil {
			t.Fatal(err)
		}
		wait := time.Duration(0)
		if res.InBackOff {
			wait = res.Until.Sub(exit)
			c.Advance(wait)
			if res2, _ := s.Check(key, PodRef{}, exit); res2.InBackOff {
				t.Fatalf("still in back-off at its until %v", res.Until)
			}
		}
		waits = append(waits, wait)
		if _, err := s.Next(key, PodRef{Name: "p", Namespace: "ns"}, exit); err != nil {
			t.Fatal(err)
		}
		c.Advance(100 * time.Millisecond) // runs briefly, then crashes
	}
	return waits
}

func TestCurve(t *testing.T) {
	s := func(ds ...int) []time.Duration {
		var out []time.Duration
		for _, d := range ds {
			out = append(out, time.Duration(d)*time.Second)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []time.Duration
	}{
		{"R-11.6 R-11.9 default curve: the first exit waits 10s, doubling to 300s", Config{}, s(10, 20, 40, 80, 160, 300, 300)},
		{"R-11.1 reduced curve 1s doubling to 60s", Config{Initial: ReducedInitial, Max: ReducedMax}, s(1, 2, 4, 8, 16, 32, 60, 60)},
		{"R-11.1 initial above max is lowered to max", Config{Initial: 30 * time.Second, Max: 20 * time.Second}, s(20, 20, 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			tc.cfg.Clock = c
			st := openT(t, filepath.Join(t.TempDir(), "b.db"), tc.cfg)
			got := crashLoop(t, st, c, len(tc.want))
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Fatalf("waits = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"R-11.1 defaults", Config{}, false},
		{"R-11.1 max below 1s refused", Config{Max: 500 * time.Millisecond}, true},
		{"R-11.1 max above 300s refused", Config{Max: 301 * time.Second}, true},
		{"R-11.1 max 1s allowed", Config{Max: time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.Normalize()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

// an exit more than ten minutes after the entry's last update
// starts the curve over (held for the first delay, R-11.9); one within
// them keeps doubling. Ten minutes
// whatever the maximum: the kubelet replaces client-go's 2 × max, which a
// configured maximum (KEP-5593) or the reduced curve would shorten.
func TestResetAfterTenMinutesWhateverTheMax_R11_5(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       time.Duration
		quiet     time.Duration
		wantReset bool
	}{
		{"default max 300s, exit at 600s keeps doubling", DefaultMax, 600 * time.Second, false},
		{"default max 300s, exit at 601s starts over", DefaultMax, 601 * time.Second, true},
		{"max 20s, exit at 41s (past 2 x max) keeps doubling", 20 * time.Second, 41 * time.Second, false},
		{"max 20s, exit at 600s keeps doubling", 20 * time.Second, 600 * time.Second, false},
		{"max 20s, exit at 601s starts over", 20 * time.Second, 601 * time.Second, true},
		{"reduced max 60s, exit at 121s (past 2 x max) keeps doubling", ReducedMax, 121 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			st := openT(t, filepath.Join(t.TempDir(), "b.db"), Config{Clock: c, Max: tc.max})
			crashLoop(t, st, c, 3) // three starts after 10, 20, 40 s (at most max)
			e, _, _ := st.Get(key)
			if want := min(80*time.Second, tc.max); e.Delay != want {
				t.Fatalf("delay after 3 starts = %v, want %v", e.Delay, want)
			}
			// The container now runs for quiet, then exits.
			exit := e.LastUpdate.Add(tc.quiet)
			c.Set(exit)
			res, err := st.Check(key, PodRef{}, exit)
			if err != nil {
				t.Fatal(err)
			}
			held := e.Delay
			if tc.wantReset {
				held = DefaultInitial
			}
			if !res.InBackOff || res.Delay != held {
				t.Fatalf("exit after %v: in back-off %t for %v, want held for %v", tc.quiet, res.InBackOff, res.Delay, held)
			}
			c.Advance(time.Hour / 60 * 5) // past any back-off
			d, err := st.Next(key, PodRef{}, exit)
			if err != nil {
				t.Fatal(err)
			}
			want := min(2*held, tc.max)
			if d != want {
				t.Fatalf("Next delay = %v, want %v", d, want)
			}
		})
	}
}

func TestKeyIncludesSpecHash(t *testing.T) {
	c := newClock()
	st := openT(t, filepath.Join(t.TempDir(), "b.db"), Config{Clock: c})
	crashLoop(t, st, c, 3)
	other := key
	other.SpecHash = "h2"
	res, err := st.Check(other, PodRef{}, c.Now())
	if err != nil || res.Delay != DefaultInitial {
		t.Fatalf("new spec hash: delay %v err=%v, want a fresh back-off (%v)", res.Delay, err, DefaultInitial)
	}
}

func TestSurvivesReopen(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "b.db")
	s1, err := Open(path, Config{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	crashLoop(t, s1, c, 3)
	exit := c.Now()
	before, err := s1.Check(key, PodRef{}, exit)
	if err != nil || !before.InBackOff {
		t.Fatalf("before close: %+v %v", before, err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, path, Config{Clock: c})
	after, err := s2.Check(key, PodRef{}, exit)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("after reopen %+v, before %+v", after, before)
	}
}

// GC drops what has not been updated for ten minutes,
// with a maximum far below five minutes too.
func TestGC_R11_5(t *testing.T) {
	for _, max := range []time.Duration{DefaultMax, 4 * time.Second} {
		t.Run(max.String(), func(t *testing.T) { testGC(t, max) })
	}
}

func testGC(t *testing.T, max time.Duration) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "b.db")
	st := openT(t, path, Config{Clock: c, Max: max})
	if _, err := st.Next(key, PodRef{}, c.Now()); err != nil {
		t.Fatal(err)
	}
	k2 := Key{PodUID: "uid-2", ContainerName: "a", SpecHash: "x"}
	c.Advance(500 * time.Second)
	if _, err := st.Next(k2, PodRef{}, c.Now()); err != nil {
		t.Fatal(err)
	}
	c.Advance(101 * time.Second) // key: 601 s idle, k2: 101 s
	n, err := st.GC()
	if err != nil || n != 1 {
		t.Fatalf("GC = %d, %v; want 1", n, err)
	}
	all, _ := st.List("")
	if len(all) != 1 || all[0].Key != k2 {
		t.Fatalf("after GC: %+v", all)
	}
	// GC on open.
	c.Advance(600 * time.Second)
	_ = st.Close()
	st2 := openT(t, path, Config{Clock: c, Max: max})
	if all, _ := st2.List(""); len(all) != 0 {
		t.Fatalf("after open GC: %+v", all)
	}
}

func TestListResetAndMetrics(t *testing.T) {
	c := newClock()
	st := openT(t, filepath.Join(t.TempDir(), "b.db"), Config{Clock: c})
	keys := []Key{
		{PodUID: "b", ContainerName: "web", SpecHash: "1"},
		{PodUID: "a", ContainerName: "z", SpecHash: "1"},
		{PodUID: "a", ContainerName: "y", SpecHash: "2"},
		{PodUID: "a", ContainerName: "y", SpecHash: "1"},
	}
	for _, k := range keys {
		if _, err := st.Next(k, PodRef{Name: "p"}, c.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, in, _ := st.Stats(); in != 0 {
		t.Fatalf("in back-off right after Next: %d, want 0 (the starts ran)", in)
	}
	c.Advance(time.Second)
	for _, k := range keys[1:] { // three crash again and are held back
		if res, err := st.Check(k, PodRef{}, c.Now()); err != nil || !res.InBackOff {
			t.Fatalf("Check %v: %+v %v", k, res, err)
		}
	}
	all, _ := st.List("")
	var got []string
	for _, e := range all {
		got = append(got, e.PodUID+"/"+e.ContainerName+"/"+e.SpecHash)
	}
	if strings.Join(got, " ") != "a/y/1 a/y/2 a/z/1 b/web/1" {
		t.Fatalf("List order: %v", got)
	}
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewMetrics(reg, st); err != nil {
		t.Fatal(err)
	}
	want := `# HELP syncpod_executor_backoff_entries Crash-loop back-off entries in the store.
# TYPE syncpod_executor_backoff_entries gauge
syncpod_executor_backoff_entries 4
# HELP syncpod_executor_containers_in_backoff Containers whose restart is currently held back by crash-loop back-off.
# TYPE syncpod_executor_containers_in_backoff gauge
syncpod_executor_containers_in_backoff 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Fatalf("lint: %v %v", probs, err)
	}
	if e, _, _ := st.Get(keys[1]); !e.HeldUntil.Equal(c.Now().Add(10 * time.Second)) {
		t.Fatalf("HeldUntil %v, want now+10s", e.HeldUntil)
	}
	n, err := st.Reset("a", "y")
	if err != nil || n != 2 {
		t.Fatalf("Reset(a, y) = %d, %v", n, err)
	}
	n, err = st.Reset("a", "")
	if err != nil || n != 1 {
		t.Fatalf("Reset(a) = %d, %v", n, err)
	}
	if l, _ := st.List("a"); len(l) != 0 {
		t.Fatalf("pod a left: %v", l)
	}
	c.Advance(11 * time.Second)
	if e, in, _ := st.Stats(); e != 1 || in != 0 {
		t.Fatalf("Stats = %d, %d; want 1, 0", e, in)
	}
}

// BenchmarkCheckNext measures one crash-loop decision with its committed
// write (bbolt fsync included).
func BenchmarkCheckNext(b *testing.B) {
	c := newClock()
	s, err := Open(filepath.Join(b.TempDir(), "b.db"), Config{Clock: c})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := 0; b.Loop(); i++ {
		exit := c.Now()
		if _, err := s.Check(key, PodRef{}, exit); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Next(key, PodRef{}, exit); err != nil {
			b.Fatal(err)
		}
		c.Advance(time.Hour)
	}
}

// TestACheckWithNothingToRecordOnlyReads_R11_3: Check is on the path of
// every restart, before its StartContainer. A check that finds no entry
// for an exit older than the first delay,
// a delay already passed or a hold already recorded commits nothing (a
// bbolt write transaction fsyncs even when it wrote nothing); only the
// first check inside a back-off records its hold, and the hold survives a
// reopen.
func TestACheckWithNothingToRecordOnlyReads_R11_3(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "b.db")
	s := openT(t, path, Config{Clock: c})
	writes := func() int64 { st := s.db.Stats(); return st.TxStats.GetWrite() }
	check := func(what string, exit time.Time, wantBackOff bool, wantWrites int64) {
		t.Helper()
		before := writes()
		res, err := s.Check(key, PodRef{}, exit)
		if err != nil {
			t.Fatal(err)
		}
		if res.InBackOff != wantBackOff {
			t.Fatalf("%s: in back-off %t, want %t", what, res.InBackOff, wantBackOff)
		}
		if got := writes() - before; (got == 0) != (wantWrites == 0) {
			t.Fatalf("%s: %d page writes, want %s", what, got, map[bool]string{true: "none", false: "a commit"}[wantWrites == 0])
		}
	}
	check("no entry, an exit longer ago than the first delay", c.Now().Add(-DefaultInitial), false, 0)
	exit := c.Now()
	if _, err := s.Next(key, PodRef{Name: "p", Namespace: "ns"}, exit); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	before := writes()
	res, err := s.Check(key, PodRef{}, exit)
	if err != nil || !res.InBackOff || !res.Until.Equal(exit.Add(DefaultInitial)) {
		t.Fatalf("first check inside the back-off: %+v, %v; want held until %v", res, err, exit.Add(DefaultInitial))
	}
	if writes() == before {
		t.Fatal("the first check inside a back-off committed nothing: its hold is not recorded")
	}
	before = writes()
	if res, err := s.Check(key, PodRef{}, exit); err != nil || !res.InBackOff {
		t.Fatalf("second check: %+v, %v", res, err)
	}
	if writes() != before {
		t.Fatal("a check whose hold was already recorded committed again")
	}
	c.Advance(DefaultInitial)
	before = writes()
	if res, err := s.Check(key, PodRef{}, exit); err != nil || res.InBackOff || res.Delay != DefaultInitial {
		t.Fatalf("check after the delay: %+v, %v; want not in back-off, delay %v", res, err, DefaultInitial)
	}
	if writes() != before {
		t.Fatal("a check after the delay had passed committed")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, Config{Clock: c})
	if e, ok, err := s.Get(key); err != nil || !ok || !e.HeldUntil.Equal(exit.Add(DefaultInitial)) {
		t.Fatalf("after a reopen: %+v %t %v, want held until %v", e, ok, err, exit.Add(DefaultInitial))
	}
}

// the first exit of a crash loop is already held for the first
// delay, counted from its finish time; the entry it records names the
// pod, and the restart after it advances the curve to the second delay.
func TestTheFirstExitIsHeld_R11_9(t *testing.T) {
	c := newClock()
	s := openT(t, filepath.Join(t.TempDir(), "b.db"), Config{Clock: c})
	exit := c.Now().Add(-time.Second)
	pod := PodRef{Name: "p", Namespace: "ns"}
	res, err := s.Check(key, pod, exit)
	if err != nil || !res.InBackOff || res.Delay != DefaultInitial || !res.Until.Equal(exit.Add(DefaultInitial)) {
		t.Fatalf("first exit: %+v, %v; want held for %v until %v", res, err, DefaultInitial, exit.Add(DefaultInitial))
	}
	if e, ok, err := s.Get(key); err != nil || !ok || e.PodRef != pod || !e.HeldUntil.Equal(res.Until) {
		t.Fatalf("recorded entry %+v %t %v, want pod %v held until %v", e, ok, err, pod, res.Until)
	}
	c.Set(res.Until)
	if res, err := s.Check(key, pod, exit); err != nil || res.InBackOff {
		t.Fatalf("at the end of the first delay: %+v, %v; want the start allowed", res, err)
	}
	if d, err := s.Next(key, pod, exit); err != nil || d != 2*DefaultInitial {
		t.Fatalf("the restart after the first exit: delay %v, %v; want %v", d, err, 2*DefaultInitial)
	}
}

// Forgetting a pod that has no back-off entry and no user namespace
// commits nothing (no fsync); one that has them still removes them, and
// for good.
func TestForgettingWhatIsNotThereCommitsNothing(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "b.db")
	s := openT(t, path, Config{Clock: c})
	writes := func() int64 { st := s.db.Stats(); return st.TxStats.GetWrite() }
	before := writes()
	if n, err := s.Reset("no-such-pod", ""); err != nil || n != 0 {
		t.Fatalf("Reset of an unknown pod: %d, %v", n, err)
	}
	if found, err := s.ReleaseUserNamespace("no-such-pod"); err != nil || found {
		t.Fatalf("ReleaseUserNamespace of an unknown pod: %t, %v", found, err)
	}
	if got := writes() - before; got != 0 {
		t.Errorf("forgetting an unknown pod made %d page writes", got)
	}
	before = writes()
	if _, err := s.Next(key, PodRef{Name: "p", Namespace: "ns"}, c.Now()); err != nil {
		t.Fatal(err)
	}
	if writes() == before {
		t.Fatal("Next committed nothing")
	}
	before = writes()
	if n, err := s.Reset(key.PodUID, "other-container"); err != nil || n != 0 {
		t.Fatalf("Reset of another container: %d, %v", n, err)
	}
	if got := writes() - before; got != 0 {
		t.Errorf("a Reset that removed nothing made %d page writes", got)
	}
	if n, err := s.Reset(key.PodUID, ""); err != nil || n != 1 {
		t.Fatalf("Reset of the pod: %d, %v; want 1", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, Config{Clock: c})
	if _, ok, err := s.Get(key); err != nil || ok {
		t.Fatalf("after a reopen the reset entry is back: %t, %v", ok, err)
	}
}
