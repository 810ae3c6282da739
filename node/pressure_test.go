package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/syncpod/syncpod/planner/plannertest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// underMemoryPressure is what a planner whose eviction manager met
// memory.available answers.
func underMemoryPressure() *plannerv1.GetNodeConditionsResponse {
	return &plannerv1.GetNodeConditionsResponse{EvictionManager: true, Conditions: []*plannerv1.NodeCondition{
		{Type: "MemoryPressure", Status: true, Reason: "KubeletHasInsufficientMemory",
			Message: "syncpod has insufficient memory available (memory.available)", Signals: []string{"memory.available"}},
		{Type: "DiskPressure", Reason: "KubeletHasNoDiskPressure", Message: "syncpod has no disk pressure"},
		{Type: "PIDPressure", Reason: "KubeletHasSufficientPID", Message: "syncpod has sufficient PID available"},
	}}
}

func conditionsByType(st corev1.NodeStatus) map[corev1.NodeConditionType]corev1.NodeCondition {
	got := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range st.Conditions {
		got[c.Type] = c
	}
	return got
}

// the Node's pressure conditions are the planner's, with its
// reasons and messages; a planner that stops answering leaves the last
// known ones, one that has no GetNodeConditions reports none; each is
// logged at warn once.
func TestPressureFollowsThePlanner(t *testing.T) {
	f := &plannertest.Planner{}
	var logs bytes.Buffer
	a, err := New(Options{Client: &Client{}, Planner: plannerClient(t, f), NodeName: "n",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, step := range []struct {
		name   string
		set    func()
		memory bool
		reason string
		msg    string
		warns  int // warnings logged so far
	}{
		{"no pressure", func() {}, false, "KubeletHasSufficientMemory", "syncpod has sufficient memory available", 0},
		{"memory pressure", func() { f.SetNodeConditions(underMemoryPressure()) }, true,
			"KubeletHasInsufficientMemory", "syncpod has insufficient memory available (memory.available)", 0},
		{"the planner does not answer: the last known", func() { f.SetNodeConditionsError(status.Error(codes.Unavailable, "down")) }, true,
			"KubeletHasInsufficientMemory", "syncpod has insufficient memory available (memory.available)", 1},
		{"still not: no second warning", func() {}, true,
			"KubeletHasInsufficientMemory", "syncpod has insufficient memory available (memory.available)", 1},
		{"it answers again, pressure gone", func() { f.SetNodeConditions(&plannerv1.GetNodeConditionsResponse{}) }, false,
			"KubeletHasSufficientMemory", "syncpod has sufficient memory available", 1},
		{"a planner without the call: no pressure", func() {
			f.SetNodeConditions(underMemoryPressure())
			f.SetNodeConditionsError(status.Error(codes.Unimplemented, "unknown method"))
		}, false, "KubeletHasSufficientMemory", "syncpod has sufficient memory available", 2},
	} {
		step.set()
		pr := a.currentPressure(ctx)
		if pr.Memory != step.memory || pr.Disk || pr.PID {
			t.Errorf("%s: pressure %+v, want memory %v only", step.name, pr, step.memory)
		}
		if a.pressure.last().Memory != step.memory {
			t.Errorf("%s: admission sees %+v", step.name, a.pressure.last())
		}
		c := conditionsByType(NodeStatus(Host{}, true, "", pr, nil, time.Unix(100, 0)))[corev1.NodeMemoryPressure]
		if (c.Status == corev1.ConditionTrue) != step.memory || c.Reason != step.reason || c.Message != step.msg {
			t.Errorf("%s: MemoryPressure = %s %q %q, want %v %q %q", step.name, c.Status, c.Reason, c.Message, step.memory, step.reason, step.msg)
		}
		if n := strings.Count(logs.String(), "level=WARN"); n != step.warns {
			t.Errorf("%s: %d warnings, want %d:\n%s", step.name, n, step.warns, logs.String())
		}
	}
}

func TestNodeStatusPressureConditions(t *testing.T) {
	pr := pressureOf(&plannerv1.GetNodeConditionsResponse{Conditions: []*plannerv1.NodeCondition{
		{Type: "DiskPressure", Status: true, Reason: "KubeletHasDiskPressure", Message: "syncpod has disk pressure (nodefs.available)"},
	}})
	got := conditionsByType(NodeStatus(Host{}, true, "", pr, nil, time.Unix(100, 0)))
	if c := got[corev1.NodeDiskPressure]; c.Status != corev1.ConditionTrue || c.Reason != "KubeletHasDiskPressure" || !strings.Contains(c.Message, "nodefs.available") {
		t.Errorf("DiskPressure = %+v", c)
	}
	if c := got[corev1.NodeMemoryPressure]; c.Status != corev1.ConditionFalse || c.Reason != "KubeletHasSufficientMemory" {
		t.Errorf("MemoryPressure = %+v: a condition the planner does not name is false", c)
	}
	if c := got[corev1.NodeReady]; c.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %+v: pressure does not make a node NotReady", c)
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
}

// under the memory pressure the planner reports, a new
// BestEffort pod is refused with reason Evicted and is not applied; a
// Burstable one is applied.
func TestAdmissionByThePlannersPressure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		request bool // a memory request makes it Burstable
		refused bool
	}{
		{"best effort refused", false, true},
		{"burstable admitted", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp := tokenlessAPIPod()
			if tc.request {
				kp.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
			}
			f := &plannertest.Planner{}
			f.SetNodeConditions(underMemoryPressure())
			a, rec, _ := admissionAgent(t, plannerClient(t, f), kp)
			a.currentPressure(t.Context())
			key := kp.Namespace + "/" + kp.Name
			if err := a.syncPod(t.Context(), key); err != nil {
				t.Fatal(err)
			}
			st, ev := pendingStatus(a, key), events(rec)
			if !tc.refused {
				if st != nil || len(f.Applied()) != 1 {
					t.Errorf("status %+v, %d applies; want the pod applied", st, len(f.Applied()))
				}
				return
			}
			const msg = "The node had condition: [MemoryPressure]."
			if st == nil || st.Phase != corev1.PodFailed || st.Reason != "Evicted" || st.Message != "Pod was rejected: "+msg {
				t.Errorf("status = %+v, want Failed Evicted %q", st, msg)
			}
			if len(ev) != 1 || ev[0] != "Warning Evicted "+msg {
				t.Errorf("events = %q", ev)
			}
			if len(f.Applied()) != 0 {
				t.Errorf("the refused pod was applied")
			}
		})
	}
}
