package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"

	"github.com/syncpod/syncpod/node/kubeconv/kubeconvtest"
)

func TestEventRelay(t *testing.T) {
	start := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	var got []string
	r := newEventRelay(start, func(ref *corev1.ObjectReference, typ, reason, msg string) {
		got = append(got, fmt.Sprintf("%s %s %s %s", ref.FieldPath, typ, reason, msg))
	})
	ev := func(reason, container string, count int32, last time.Time, typ syncpodv1.EventType) *syncpodv1.Event {
		return &syncpodv1.Event{Type: typ, Reason: reason, InvolvedContainer: container, Message: reason + " msg",
			Count: count, LastTime: timestamppb.New(last)}
	}
	normal, warning := syncpodv1.EventType_EVENT_TYPE_NORMAL, syncpodv1.EventType_EVENT_TYPE_WARNING
	kp := kubeconvtest.APIPod()
	kp.Spec.InitContainers = []corev1.Container{{Name: "init"}}

	// First sight: events from before the agent started are not repeated.
	r.Observe(kp, []*syncpodv1.Event{
		ev("Pulled", "app", 1, start.Add(-time.Minute), normal),
		ev("Started", "init", 1, start.Add(time.Second), normal),
	})
	// Later: only count increases are new; a big jump is bounded.
	r.Observe(kp, []*syncpodv1.Event{
		ev("Pulled", "app", 1, start.Add(-time.Minute), normal),
		ev("Started", "init", 1, start.Add(time.Second), normal),
		ev("BackOff", "app", 10, start.Add(2*time.Second), warning),
		ev("Killing", "", 1, start.Add(3*time.Second), normal),
	})
	want := []string{
		"spec.initContainers{init} Normal Started Started msg",
		"spec.containers{app} Warning BackOff BackOff msg",
		"spec.containers{app} Warning BackOff BackOff msg",
		"spec.containers{app} Warning BackOff BackOff msg",
		" Normal Killing Killing msg",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("emitted:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A forgotten pod (deleted) starts over.
	r.Forget(kp.UID)
	got = nil
	r.Observe(kp, []*syncpodv1.Event{ev("Killing", "", 2, start.Add(4*time.Second), normal)})
	if len(got) != 2 {
		t.Errorf("after Forget: %v", got)
	}
}

func TestNodeStatusKeepsTransitionTimes(t *testing.T) {
	h := Host{Hostname: "box", InternalIP: "192.0.2.7", CPUs: 2, MemoryBytes: 4 << 30, EphemeralStorageBytes: 10 << 30, MaxPods: 110,
		RuntimeVersion: "containerd://2.4.2", AgentVersion: "syncpod-dev"}
	t0 := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	s0 := NodeStatus(h, true, "", Pressure{}, nil, t0)
	if s0.Capacity.Cpu().Value() != 2 || s0.Allocatable.Memory().Value() != 4<<30 || s0.Capacity.Pods().Value() != 110 {
		t.Errorf("capacity %v allocatable %v", s0.Capacity, s0.Allocatable)
	}
	if s0.NodeInfo.ContainerRuntimeVersion != "containerd://2.4.2" || s0.Addresses[0].Address != "192.0.2.7" {
		t.Errorf("node info %+v addresses %v", s0.NodeInfo, s0.Addresses)
	}
	cond := func(s corev1.NodeStatus, typ corev1.NodeConditionType) corev1.NodeCondition {
		for _, c := range s.Conditions {
			if c.Type == typ {
				return c
			}
		}
		t.Fatalf("no %s condition", typ)
		return corev1.NodeCondition{}
	}
	t1 := t0.Add(time.Minute)
	s1 := NodeStatus(h, true, "", Pressure{}, &s0, t1)
	if r := cond(s1, corev1.NodeReady); !r.LastTransitionTime.Time.Equal(t0) || !r.LastHeartbeatTime.Time.Equal(t1) {
		t.Errorf("unchanged Ready: transition %v heartbeat %v", r.LastTransitionTime, r.LastHeartbeatTime)
	}
	t2 := t1.Add(time.Minute)
	s2 := NodeStatus(h, false, "planner down", Pressure{}, &s1, t2)
	if r := cond(s2, corev1.NodeReady); r.Status != corev1.ConditionFalse || !r.LastTransitionTime.Time.Equal(t2) || r.Message != "planner down" {
		t.Errorf("Ready turned false: %+v", r)
	}
	if m := cond(s2, corev1.NodeMemoryPressure); !m.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("MemoryPressure transition moved: %v", m.LastTransitionTime)
	}
	if got := NodeStatus(Host{}, true, "", Pressure{}, nil, t0).NodeInfo.ContainerRuntimeVersion; got != "unknown://unknown" {
		t.Errorf("unknown runtime reported as %q", got)
	}
}

// TestNodeStatusDeclaresWhatSyncpodImplements: the Node's
// status.declaredFeatures lists, of what a v1.37 kubelet
// declares by default, only the features syncpod implements.
func TestNodeStatusDeclaresWhatSyncpodImplements(t *testing.T) {
	got := NodeStatus(Host{}, true, "", Pressure{}, nil, time.Unix(100, 0)).DeclaredFeatures
	if strings.Join(got, ",") != "RestartAllContainersOnContainerExits" {
		t.Errorf("declaredFeatures %v", got)
	}
	// A fresh slice each time: a caller's change reaches no other status.
	got[0] = "x"
	if DeclaredFeatures()[0] == "x" {
		t.Error("DeclaredFeatures shares its slice")
	}
}

// TestNodeStatusReportsTheRuntimeHandlers: the Node's
// status.runtimeHandlers are the CRI runtime's handlers with their
// features, as the kubelet reports them (whether a handler runs user
// namespaces, R-27.3).
func TestNodeStatusReportsTheRuntimeHandlers(t *testing.T) {
	st := &runtimeapi.StatusResponse{RuntimeHandlers: []*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true, RecursiveReadOnlyMounts: true}},
		{Name: "kata"},
	}}
	hs := NodeStatus(Host{RuntimeHandlers: HandlersOf(st)}, true, "", Pressure{}, nil, time.Unix(100, 0)).RuntimeHandlers
	if len(hs) != 2 || hs[0].Name != "" || !*hs[0].Features.UserNamespaces || !*hs[0].Features.RecursiveReadOnlyMounts ||
		hs[1].Name != "kata" || *hs[1].Features.UserNamespaces || *hs[1].Features.RecursiveReadOnlyMounts {
		t.Errorf("runtimeHandlers %+v", hs)
	}
}
