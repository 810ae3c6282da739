package evictionplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

//
func TestParse(t *testing.T) {
	ths, err := Parse(Config{
		Hard:            "memory.available<100Mi, nodefs.available<10%",
		Soft:            "memory.available<1Gi",
		SoftGracePeriod: "memory.available=1m30s",
		MinimumReclaim:  "memory.available=50Mi,nodefs.available=5%",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Threshold{
		{Signal: MemoryAvailable, Value: Value{Quantity: 100 << 20, Text: "100Mi"}, MinReclaim: Value{Quantity: 50 << 20, Text: "50Mi"}},
		{Signal: NodeFsAvailable, Value: Value{Percentage: 0.10}, MinReclaim: Value{Percentage: 0.05}},
		{Signal: MemoryAvailable, Value: Value{Quantity: 1 << 30, Text: "1Gi"}, GracePeriod: 90 * time.Second, MinReclaim: Value{Quantity: 50 << 20, Text: "50Mi"}},
	}
	if !slices.Equal(ths, want) {
		t.Errorf("Parse =\n%+v\nwant\n%+v", ths, want)
	}
	if ths, err := Parse(Config{Hard: DefaultHard}); err != nil || len(ths) != 5 {
		t.Errorf("the default: %+v %v", ths, err)
	}
	if ths, err := Parse(Config{}); err != nil || len(ths) != 0 {
		t.Errorf("nothing set: %+v %v", ths, err)
	}
	_, err = Parse(Config{
		Hard:            "memory.available>1Gi,disk.free<10%,nodefs.available<150%,memory.available<0,pid.available<1e400",
		Soft:            "pid.available<100,imagefs.available<1Gi",
		SoftGracePeriod: "imagefs.available=soon",
		MinimumReclaim:  "memory.available=-1",
	})
	for _, part := range []string{
		`--eviction-hard "memory.available>1Gi"`, `unknown signal "disk.free"`, `"nodefs.available<150%"`,
		`"memory.available<0": quantity must be positive`, `"pid.available<1e400": quantity is too large`,
		`--eviction-soft pid.available: a soft threshold needs a grace period`,
		`--eviction-soft-grace-period "imagefs.available=soon"`, `--eviction-minimum-reclaim "memory.available=-1"`,
	} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("error %v does not name %q", err, part)
		}
	}
}

func roomy() Signals {
	return Signals{
		MemoryAvailableBytes: 4 << 30, MemoryCapacityBytes: 8 << 30,
		NodeFsAvailableBytes: 50 << 30, NodeFsCapacityBytes: 100 << 30,
		NodeFsInodesFree: 900_000, NodeFsInodes: 1_000_000,
		ImageFsAvailableBytes: 50 << 30, ImageFsCapacityBytes: 100 << 30,
		ImageFsInodesFree: 900_000, ImageFsInodes: 1_000_000,
		Processes: 500, PIDMax: 4_194_304,
	}
}

func mustParse(t *testing.T, c Config) []Threshold {
	t.Helper()
	ths, err := Parse(c)
	if err != nil {
		t.Fatal(err)
	}
	return ths
}

// rounds with an injected clock.
func TestObserveGraceMinReclaimAndTransition(t *testing.T) {
	ths := mustParse(t, Config{
		Hard:            "memory.available<100Mi,pid.available<1000",
		Soft:            "nodefs.available<20%",
		SoftGracePeriod: "nodefs.available=2m",
		MinimumReclaim:  "memory.available=200Mi",
	})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		name   string
		after  time.Duration
		change func(*Signals)
		conds  []string
		acting []Signal
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a hard threshold acts at once and holds until its minimum reclaim is back", []step{
			{"roomy", 0, func(*Signals) {}, nil, nil},
			{"memory below 100Mi", 10 * time.Second, func(s *Signals) { s.MemoryAvailableBytes = 50 << 20 }, []string{"MemoryPressure"}, []Signal{MemoryAvailable}},
			{"above 100Mi but below 100Mi+200Mi: still acting", 10 * time.Second, func(s *Signals) { s.MemoryAvailableBytes = 250 << 20 }, []string{"MemoryPressure"}, []Signal{MemoryAvailable}},
			{"at 300Mi: recovered, the condition held for the transition period", 10 * time.Second, func(s *Signals) { s.MemoryAvailableBytes = 300 << 20 }, []string{"MemoryPressure"}, nil},
			{"the transition period later: no condition", 5 * time.Minute, func(s *Signals) { s.MemoryAvailableBytes = 300 << 20 }, nil, nil},
		}},
		{"a soft threshold waits for its grace period", []step{
			{"nodefs below 20%", 0, func(s *Signals) { s.NodeFsAvailableBytes = 10 << 30 }, []string{"DiskPressure"}, nil},
			{"one minute later", time.Minute, func(s *Signals) { s.NodeFsAvailableBytes = 10 << 30 }, []string{"DiskPressure"}, nil},
			{"two minutes after it was first met", time.Minute, func(s *Signals) { s.NodeFsAvailableBytes = 10 << 30 }, []string{"DiskPressure"}, []Signal{NodeFsAvailable}},
		}},
		{"a soft threshold that recovers before its grace period starts afresh", []step{
			{"nodefs below 20%", 0, func(s *Signals) { s.NodeFsAvailableBytes = 10 << 30 }, []string{"DiskPressure"}, nil},
			{"recovered", 90 * time.Second, func(*Signals) {}, []string{"DiskPressure"}, nil},
			{"met again", 60 * time.Second, func(s *Signals) { s.NodeFsAvailableBytes = 10 << 30 }, []string{"DiskPressure"}, nil},
		}},
		{"memory is reclaimed first", []step{
			{"pids and memory", 0, func(s *Signals) { s.PIDMax, s.Processes, s.MemoryAvailableBytes = 10_000, 9_500, 1 }, []string{"MemoryPressure", "PIDPressure"}, []Signal{MemoryAvailable, PIDAvailable}},
		}},
		{"an unmeasured signal is never met", []step{
			{"nothing measured", 0, func(s *Signals) { *s = Signals{} }, nil, nil},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st State
			now := t0
			for _, s := range tc.steps {
				now = now.Add(s.after)
				sig := roomy()
				s.change(&sig)
				o := Observe(st, Round{Thresholds: ths, Signals: sig, Now: now, PressureTransitionPeriod: 5 * time.Minute})
				var acting []Signal
				for _, a := range o.Acting {
					acting = append(acting, a.Signal)
				}
				if !slices.Equal(o.Conditions, s.conds) || !slices.Equal(acting, s.acting) {
					t.Errorf("%s: conditions %v acting %v, want %v %v", s.name, o.Conditions, acting, s.conds, s.acting)
				}
				st = o.State
			}
		})
	}
}

// the kubelet's orderings.
func TestRank(t *testing.T) {
	mem := func(name string, prio int32, used, req int64) Pod {
		return Pod{Name: name, Priority: prio, Measured: true, MemoryBytes: used << 20, MemoryRequest: req << 20}
	}
	disk := func(name string, prio int32, used, inodes, req int64) Pod {
		return Pod{Name: name, Priority: prio, Measured: true, DiskBytes: used << 20, Inodes: inodes, DiskRequest: req << 20}
	}
	pids := func(name string, prio int32, procs int64) Pod {
		return Pod{Name: name, Priority: prio, Measured: true, Processes: procs}
	}
	unmeasured := Pod{Name: "unmeasured", Priority: 1000}
	for _, tc := range []struct {
		name   string
		signal Signal
		pods   []Pod
		want   []string
	}{
		{"memory: over its request beats a higher usage within it", MemoryAvailable,
			[]Pod{mem("guaranteed-big", 0, 900, 1000), mem("besteffort-hog", 0, 300, 0)},
			[]string{"besteffort-hog", "guaranteed-big"}},
		{"memory: among those over, lower priority first", MemoryAvailable,
			[]Pod{mem("high", 100, 900, 0), mem("low", 0, 10, 0)},
			[]string{"low", "high"}},
		{"memory: same priority, larger usage above the request first", MemoryAvailable,
			[]Pod{mem("a", 0, 500, 400), mem("b", 0, 300, 0), mem("c", 0, 600, 0)},
			[]string{"c", "b", "a"}},
		{"memory: within requests, priority then usage above the request", MemoryAvailable,
			[]Pod{mem("g1", 10, 100, 500), mem("g2", 0, 100, 500), mem("g3", 0, 400, 500)},
			[]string{"g3", "g2", "g1"}},
		{"memory: an unmeasured pod first", MemoryAvailable,
			[]Pod{mem("hog", 0, 900, 0), unmeasured},
			[]string{"unmeasured", "hog"}},
		{"disk: over the ephemeral-storage request, then priority, then use", NodeFsAvailable,
			[]Pod{disk("within", 0, 900, 0, 1000), disk("over-high", 5, 20, 0, 10), disk("over-low", 0, 15, 0, 10)},
			[]string{"over-low", "over-high", "within"}},
		{"imagefs ranks as nodefs", ImageFsAvailable,
			[]Pod{disk("small", 0, 10, 0, 0), disk("big", 0, 20, 0, 0)},
			[]string{"big", "small"}},
		{"inodes: any inode exceeds, then priority, then inodes", NodeFsInodesFree,
			[]Pod{disk("none", -1, 0, 0, 0), disk("few", 0, 0, 10, 0), disk("many", 0, 0, 1000, 0)},
			[]string{"many", "few", "none"}},
		{"pids: priority first, then processes", PIDAvailable,
			[]Pod{pids("busy-high", 10, 5000), pids("quiet", 0, 3), pids("busy", 0, 400)},
			[]string{"busy", "quiet", "busy-high"}},
		{"pids: an unmeasured pod first among equal priority", PIDAvailable,
			[]Pod{pids("busy", 1000, 400), unmeasured},
			[]string{"unmeasured", "busy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.pods)
			var got []string
			for _, p := range Rank(tc.signal, tc.pods) {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Rank(%s) = %v, want %v", tc.signal, got, tc.want)
			}
			if !slices.EqualFunc(in, tc.pods, func(a, b Pod) bool { return a.Name == b.Name }) {
				t.Errorf("Rank changed its input")
			}
		})
	}
}

// one pod, the kubelet's message and grace period.
func TestChoose(t *testing.T) {
	hard := mustParse(t, Config{Hard: "memory.available<500Mi"})
	soft := mustParse(t, Config{Soft: "memory.available<500Mi", SoftGracePeriod: "memory.available=30s"})
	sig := roomy()
	sig.MemoryAvailableBytes = 400 << 20
	hog := Pod{Name: "hog", Measured: true, MemoryBytes: 300 << 20, TerminationGracePeriodSeconds: ptr(int64(60)),
		Containers: []Container{{Name: "eat", Measured: true, MemoryBytes: 300 << 20}, {Name: "idle", Measured: true, MemoryBytes: 1 << 20, MemoryRequest: "8Mi", MemoryRequestBytes: 8 << 20}}}
	guaranteed := Pod{Name: "guaranteed", Measured: true, MemoryBytes: 100 << 20, MemoryRequest: 128 << 20, PodLevelMemoryRequest: "128Mi",
		Containers: []Container{{Name: "app", Measured: true, MemoryBytes: 100 << 20, MemoryRequest: "128Mi", MemoryRequestBytes: 128 << 20}}}
	critical := Pod{Name: "critical", Critical: true, Measured: true, MemoryBytes: 900 << 20}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	o := Observe(State{}, Round{Thresholds: hard, Signals: sig, Now: t0})
	ev, ok := Choose(o, sig, []Pod{guaranteed, critical, hog}, 30)
	want := "The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. Container eat was using 300Mi, request is 0, has larger consumption of memory. "
	if !ok || ev.Pod.Name != "hog" || ev.Message != want || ev.GracePeriodSeconds != 1 || ev.Signal != MemoryAvailable {
		t.Errorf("hard: %+v %v, want hog with %q and 1 s", ev, ok, want)
	}
	if ev, ok := Choose(o, sig, []Pod{critical}, 30); ok {
		t.Errorf("a critical pod was chosen: %+v", ev)
	}
	if ev, ok := Choose(Observe(State{}, Round{Thresholds: hard, Signals: roomy(), Now: t0}), roomy(), []Pod{hog}, 30); ok {
		t.Errorf("no pressure, yet %+v", ev)
	}

	st := Observe(State{}, Round{Thresholds: soft, Signals: sig, Now: t0}).State
	o = Observe(st, Round{Thresholds: soft, Signals: sig, Now: t0.Add(30 * time.Second)})
	if ev, ok := Choose(o, sig, []Pod{hog}, 30); !ok || ev.GracePeriodSeconds != 30 {
		t.Errorf("soft: %+v %v, want the max pod grace period 30 s", ev, ok)
	}
	if ev, ok := Choose(o, sig, []Pod{hog}, 120); !ok || ev.GracePeriodSeconds != 60 {
		t.Errorf("soft: %+v %v, want the pod's own 60 s", ev, ok)
	}
	g := guaranteed
	g.MemoryBytes = 200 << 20
	g.Containers = []Container{{Name: "app", Measured: true, MemoryBytes: 200 << 20, MemoryRequest: "128Mi", MemoryRequestBytes: 128 << 20}}
	if m := Message(MemoryAvailable, g, o.Acting, sig); m != "The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. "+
		"Pod guaranteed was using 200Mi, request is 128Mi, has larger consumption of memory. "+
		"Container app was using 200Mi, request is 128Mi, has larger consumption of memory. " {
		t.Errorf("pod-level message: %q", m)
	}
	pid := mustParse(t, Config{Hard: "pid.available<10%"})
	ps := roomy()
	ps.PIDMax, ps.Processes = 10_000, 9_500
	if m := Message(PIDAvailable, hog, Met(pid, ps, false), ps); m != "The node was low on resource: pids. Threshold quantity: 1k, available: 500. " {
		t.Errorf("pid message: %q", m)
	}
}

// the conditions name the signals that put the node under
// pressure, a soft threshold as soon as it is met and before its grace
// period, and keep them while the condition is held after recovery.
func TestNodeConditions(t *testing.T) {
	ths := mustParse(t, Config{
		Hard:            "memory.available<100Mi",
		Soft:            "nodefs.available<20%,nodefs.inodesFree<10%",
		SoftGracePeriod: "nodefs.available=2m,nodefs.inodesFree=2m",
	})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type want struct{ status, reason, message string }
	var st0 State
	for _, tc := range []struct {
		name   string
		after  time.Duration
		change func(*Signals)
		want   []want // memory, disk, pid
	}{
		{"roomy", 0, func(*Signals) {}, []want{
			{"false", "KubeletHasSufficientMemory", "syncpod has sufficient memory available"},
			{"false", "KubeletHasNoDiskPressure", "syncpod has no disk pressure"},
			{"false", "KubeletHasSufficientPID", "syncpod has sufficient PID available"}}},
		{"soft disk thresholds met, within their grace period", 10 * time.Second, func(s *Signals) {
			s.NodeFsAvailableBytes, s.NodeFsInodesFree = 10<<30, 1
		}, []want{
			{"false", "KubeletHasSufficientMemory", "syncpod has sufficient memory available"},
			{"true", "KubeletHasDiskPressure", "syncpod has disk pressure (nodefs.available, nodefs.inodesFree)"},
			{"false", "KubeletHasSufficientPID", "syncpod has sufficient PID available"}}},
		{"recovered: held with the signals of its last sighting", 10 * time.Second, func(*Signals) {}, []want{
			{"false", "KubeletHasSufficientMemory", "syncpod has sufficient memory available"},
			{"true", "KubeletHasDiskPressure", "syncpod has disk pressure (nodefs.available, nodefs.inodesFree)"},
			{"false", "KubeletHasSufficientPID", "syncpod has sufficient PID available"}}},
		{"memory under its hard threshold", 10 * time.Second, func(s *Signals) { s.MemoryAvailableBytes = 1 }, []want{
			{"true", "KubeletHasInsufficientMemory", "syncpod has insufficient memory available (memory.available)"},
			{"true", "KubeletHasDiskPressure", "syncpod has disk pressure (nodefs.available, nodefs.inodesFree)"},
			{"false", "KubeletHasSufficientPID", "syncpod has sufficient PID available"}}},
		{"the transition period later", 5 * time.Minute, func(*Signals) {}, []want{
			{"false", "KubeletHasSufficientMemory", "syncpod has sufficient memory available"},
			{"false", "KubeletHasNoDiskPressure", "syncpod has no disk pressure"},
			{"false", "KubeletHasSufficientPID", "syncpod has sufficient PID available"}}},
	} {
		// The steps build on each other.
		t0 = t0.Add(tc.after)
		sig := roomy()
		tc.change(&sig)
		o := Observe(st0, Round{Thresholds: ths, Signals: sig, Now: t0, PressureTransitionPeriod: 5 * time.Minute})
		st0 = o.State
		got := NodeConditions(o.State, o.Conditions)
		if len(got) != 3 || got[0].Type != MemoryPressure || got[1].Type != DiskPressure || got[2].Type != PIDPressure {
			t.Fatalf("%s: conditions %+v, want memory, disk, pid", tc.name, got)
		}
		for i, w := range tc.want {
			g := got[i]
			if fmt.Sprint(g.Status) != w.status || g.Reason != w.reason || g.Message != w.message {
				t.Errorf("%s: %s = %v %q %q, want %s %q %q", tc.name, g.Type, g.Status, g.Reason, g.Message, w.status, w.reason, w.message)
			}
			if g.Status != (len(g.Signals) > 0) {
				t.Errorf("%s: %s status %v with signals %v", tc.name, g.Type, g.Status, g.Signals)
			}
		}
	}
}
