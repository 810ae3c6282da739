package node

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/syncpod/syncpod/node/eviction"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

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
	// Only memory is measured: the other signals are never pressure.
	roomy := eviction.Signals{MemoryAvailableBytes: 4 << 30, MemoryCapacityBytes: 8 << 30}
	s := roomy
	a, err := New(Options{Client: &Client{}, Planner: plannerv1.NewPlannerServiceClient(nil), NodeName: "n", Logger: slog.New(slog.DiscardHandler),
		Signals: eviction.HostReaderFunc(func() (eviction.Signals, error) { return s, nil }), Now: func() time.Time { return now }})
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
	s = roomy
	now = now.Add(6 * time.Minute)
	if p := a.currentPressure(); p.Memory {
		t.Errorf("6 min later, roomy again: %+v", p)
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
