package node

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// roomy is a host far from every default threshold.
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

func TestPressureOfDefaultThresholds(t *testing.T) {
	for _, tc := range []struct {
		name           string
		change         func(*Signals)
		mem, disk, pid bool
		why            []string
	}{
		{"roomy host", func(*Signals) {}, false, false, false, nil},
		{"memory.available just at 100Mi is no pressure", func(s *Signals) { s.MemoryAvailableBytes = 100 << 20 }, false, false, false, nil},
		{"memory.available below 100Mi", func(s *Signals) { s.MemoryAvailableBytes = 100<<20 - 1 }, true, false, false, []string{"memory.available"}},
		{"nodefs.available below 10%", func(s *Signals) { s.NodeFsAvailableBytes = 9 << 30 }, false, true, false, []string{"nodefs.available"}},
		{"nodefs.inodesFree below 5%", func(s *Signals) { s.NodeFsInodesFree = 49_999 }, false, true, false, []string{"nodefs.inodesFree"}},
		{"imagefs.available below 15% (nodefs at 14% is fine)", func(s *Signals) { s.ImageFsAvailableBytes = 14 << 30; s.NodeFsAvailableBytes = 14 << 30 }, false, true, false, []string{"imagefs.available"}},
		{"imagefs.inodesFree below 5%", func(s *Signals) { s.ImageFsInodesFree = 10 }, false, true, false, []string{"imagefs.inodesFree"}},
		{"pid headroom below 5%", func(s *Signals) { s.PIDMax = 32768; s.Processes = 31200 }, false, false, true, []string{"pid.available"}},
		{"pid headroom at 5% is no pressure", func(s *Signals) { s.PIDMax = 1000; s.Processes = 950 }, false, false, false, nil},
		{"unmeasured signals are no pressure", func(s *Signals) { *s = Signals{} }, false, false, false, nil},
		{"everything at once", func(s *Signals) {
			s.MemoryAvailableBytes, s.NodeFsAvailableBytes, s.Processes, s.PIDMax = 1, 1, 99, 100
		}, true, true, true, []string{"memory.available", "nodefs.available", "pid.available"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := roomy()
			tc.change(&s)
			p := PressureOf(s, DefaultThresholds())
			if p.Memory != tc.mem || p.Disk != tc.disk || p.PID != tc.pid || !slices.Equal(p.Why, tc.why) {
				t.Errorf("PressureOf = %+v, want memory=%v disk=%v pid=%v why=%v", p, tc.mem, tc.disk, tc.pid, tc.why)
			}
		})
	}
}

func TestParseThresholds(t *testing.T) {
	th, err := ParseThresholds("memory.available<1Gi, nodefs.available<20%,pid.available<1000", DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultThresholds()
	want.MemoryAvailable = Threshold{Quantity: 1 << 30}
	want.NodeFsAvailable = Threshold{Percentage: 0.20}
	want.PIDAvailable = Threshold{Quantity: 1000}
	if th != want {
		t.Errorf("ParseThresholds = %+v, want %+v", th, want)
	}
	if th, err := ParseThresholds("", DefaultThresholds()); err != nil || th != DefaultThresholds() {
		t.Errorf("empty: %+v %v", th, err)
	}
	_, err = ParseThresholds("memory.available>1Gi,disk.free<10%,nodefs.available<150%,imagefs.available<-1", DefaultThresholds())
	for _, part := range []string{"memory.available>1Gi", "unknown signal \"disk.free\"", "nodefs.available<150%", "imagefs.available<-1"} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("error %v does not name %q", err, part)
		}
	}
}

// TestPressureHeldThroughTransitionPeriod: a condition stays until its
// signal has been fine for the whole period (the kubelet's
// evictionPressureTransitionPeriod), so it does not flap.
func TestPressureHeldThroughTransitionPeriod(t *testing.T) {
	tr := &pressureTracker{period: 5 * time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if p := tr.observe(Pressure{}, t0); p.Memory || p.Disk || p.PID {
		t.Fatalf("no pressure observed, got %+v", p)
	}
	if p := tr.observe(Pressure{Memory: true, Why: []string{"memory.available"}}, t0.Add(time.Minute)); !p.Memory || p.Disk {
		t.Fatalf("memory pressure observed, got %+v", p)
	}
	if p := tr.observe(Pressure{}, t0.Add(5*time.Minute)); !p.Memory || !slices.Equal(p.Why, []string{"memory.available"}) {
		t.Errorf("4 min after the last crossing: %+v, want memory pressure held", p)
	}
	if p := tr.observe(Pressure{}, t0.Add(6*time.Minute)); p.Memory || p.Why != nil {
		t.Errorf("5 min after the last crossing: %+v, want cleared", p)
	}
}

func TestNodeStatusPressureConditions(t *testing.T) {
	st := NodeStatus(Host{}, true, "", Pressure{Disk: true, Why: []string{"nodefs.available"}}, nil, time.Unix(100, 0))
	got := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range st.Conditions {
		got[c.Type] = c
	}
	if c := got[corev1.NodeDiskPressure]; c.Status != corev1.ConditionTrue || c.Reason != "KubeletHasDiskPressure" || !strings.Contains(c.Message, "nodefs.available") {
		t.Errorf("DiskPressure = %+v", c)
	}
	if c := got[corev1.NodeMemoryPressure]; c.Status != corev1.ConditionFalse || c.Reason != "KubeletHasSufficientMemory" {
		t.Errorf("MemoryPressure = %+v", c)
	}
	if c := got[corev1.NodeReady]; c.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %+v: pressure does not make a node NotReady", c)
	}
}

func TestAgentPressureFromAFakeHostReader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := roomy()
	a, err := New(Options{Client: &Client{}, Planner: plannerv1.NewPlannerServiceClient(nil), NodeName: "n", Logger: slog.New(slog.DiscardHandler),
		Signals: HostReaderFunc(func() (Signals, error) { return s, nil }), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if p := a.currentPressure(); p.Memory || p.Disk || p.PID {
		t.Errorf("roomy host: %+v", p)
	}
	s.MemoryAvailableBytes = 50 << 20
	if p := a.currentPressure(); !p.Memory {
		t.Errorf("50Mi available: %+v, want memory pressure", p)
	}
	s = roomy()
	now = now.Add(6 * time.Minute)
	if p := a.currentPressure(); p.Memory {
		t.Errorf("6 min later, roomy again: %+v", p)
	}
}

func TestReadSignalsFromThisHost(t *testing.T) {
	s, err := ReadSignals(t.TempDir(), "/").Signals()
	if err != nil {
		t.Fatal(err)
	}
	if s.MemoryCapacityBytes <= 0 || s.MemoryAvailableBytes <= 0 || s.MemoryAvailableBytes > s.MemoryCapacityBytes ||
		s.NodeFsCapacityBytes <= 0 || s.NodeFsAvailableBytes > s.NodeFsCapacityBytes || s.ImageFsCapacityBytes <= 0 ||
		s.PIDMax <= 0 || s.Processes <= 0 || s.Processes > s.PIDMax {
		t.Errorf("signals of this host look wrong: %+v", s)
	}
	if _, err := ReadSignals("/nonexistent/syncpod", "/").Signals(); err == nil || !strings.Contains(err.Error(), "/nonexistent/syncpod") {
		t.Errorf("an unreadable dir: %v, want an error naming it", err)
	}
}

func TestAdmitUnderPressure(t *testing.T) {
	for _, tc := range []struct {
		name string
		pr   Pressure
		qos  corev1.PodQOSClass
		ok   bool
		msg  string
	}{
		{"no pressure, best effort", Pressure{}, corev1.PodQOSBestEffort, true, ""},
		{"memory pressure, best effort refused", Pressure{Memory: true}, corev1.PodQOSBestEffort, false, "The node had condition: [MemoryPressure]."},
		{"memory pressure, burstable admitted", Pressure{Memory: true}, corev1.PodQOSBurstable, true, ""},
		{"memory pressure, guaranteed admitted", Pressure{Memory: true}, corev1.PodQOSGuaranteed, true, ""},
		{"disk pressure refuses every pod", Pressure{Disk: true}, corev1.PodQOSGuaranteed, false, "The node had condition: [DiskPressure]."},
		{"pid pressure refuses every pod", Pressure{PID: true}, corev1.PodQOSBurstable, false, "The node had condition: [PIDPressure]."},
		{"memory and disk", Pressure{Memory: true, Disk: true}, corev1.PodQOSBurstable, false, "The node had condition: [MemoryPressure, DiskPressure]."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, msg := admitUnderPressure(tc.pr, tc.qos)
			if ok != tc.ok || msg != tc.msg {
				t.Errorf("admitUnderPressure = %v %q, want %v %q", ok, msg, tc.ok, tc.msg)
			}
		})
	}
	tr := &pressureTracker{period: time.Minute}
	if p := tr.last(); p.Memory || p.Disk || p.PID {
		t.Errorf("before any observation: %+v", p)
	}
	tr.observe(Pressure{Disk: true}, time.Unix(0, 0))
	if !tr.last().Disk {
		t.Errorf("last after observing disk pressure: %+v", tr.last())
	}
}
