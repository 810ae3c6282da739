package syncer

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/syncpod/syncpod/planner/evictionplan"
	"github.com/syncpod/syncpod/planner/plan"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// fakeNode is the node's signals and its pods' usage, set by the test.
type fakeNode struct {
	mu      sync.Mutex
	signals evictionplan.Signals
	stats   map[string]*syncpodv1.PodStats
	reads   int
	// read, when set, answers the i-th read (from 0) instead of signals.
	read func(i int) evictionplan.Signals
	// imageGCs counts RemoveUnusedImages.
	imageGCs int
}

func (n *fakeNode) RemoveUnusedImages(context.Context) (int, uint64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.imageGCs++
	return 2, 1 << 30, nil
}

func (n *fakeNode) Signals() (evictionplan.Signals, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reads++
	if n.read != nil {
		return n.read(n.reads - 1), nil
	}
	return n.signals, nil
}

func (n *fakeNode) setMemoryAvailable(b int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.signals.MemoryAvailableBytes = b
}

func (n *fakeNode) PodStats(_ context.Context, uids []string) ([]*syncpodv1.PodStats, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*syncpodv1.PodStats
	for _, u := range uids {
		if st, ok := n.stats[u]; ok {
			out = append(out, st)
		}
	}
	return out, nil
}

const guaranteedUID = "7a2d3b4c-1e5f-4a6b-9c7d-8e9fa0b1c2d3"

// under a hard memory.available threshold the BestEffort
// hog is evicted, with the kubelet's message, 1 s of grace, a Warning
// Evicted event and DisruptionTarget; the Guaranteed pod beside it is
// not, and once memory is back nothing else is.
func TestMemoryPressureEvictsTheBestEffortHogOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ths, err := evictionplan.Parse(evictionplan.Config{Hard: "memory.available<500Mi"})
		if err != nil {
			t.Fatal(err)
		}
		node := &fakeNode{
			signals: evictionplan.Signals{MemoryAvailableBytes: 4 << 30, MemoryCapacityBytes: 8 << 30},
			stats: map[string]*syncpodv1.PodStats{
				uid: {PodUid: uid, MemoryWorkingSetBytes: 300 << 20,
					Containers: []*syncpodv1.ContainerStats{{Name: "app", MemoryWorkingSetBytes: 300 << 20}}},
				guaranteedUID: {PodUid: guaranteedUID, MemoryWorkingSetBytes: 100 << 20,
					Containers: []*syncpodv1.ContainerStats{{Name: "app", MemoryWorkingSetBytes: 100 << 20}}},
			},
		}
		e := newEnvWith(t, func(o *Options) {
			o.EvictionCheckPeriod = 10 * time.Second
			o.Pressure = Pressure{Thresholds: ths, Host: node, Stats: node, TransitionPeriod: 5 * time.Minute, MaxPodGracePeriodSeconds: 30}
		})
		hog := webPod()
		g := webPod()
		g.Uid, g.Name = guaranteedUID, "guaranteed"
		g.Spec.Containers[0].Resources = &syncpodv1.ResourceRequirements{
			Requests: &syncpodv1.ResourceList{Cpu: "100m", Memory: "128Mi"},
			Limits:   &syncpodv1.ResourceList{Cpu: "100m", Memory: "128Mi"},
		}
		for _, p := range []*syncpodv1.Pod{hog, g} {
			o := runningObserved(p.GetUid())
			o.Name = p.GetName()
			o.Containers[0].Id = "c-" + p.GetName()
			o.Sandboxes[0].Id = "sb-" + p.GetName()
			o.Containers[0].SandboxId = o.Sandboxes[0].Id
			o.Containers[0].SpecHash = plan.SpecHash(p.GetSpec().GetContainers()[0])
			e.pleg.set(o)
		}
		e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			return &executorv1.ApplyActionsResponse{}
		})
		e.apply(t, hog)
		e.apply(t, g)
		phase := func(u string) *syncpodv1.PodStatus {
			rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: u})
			return rec.GetStatus()
		}
		time.Sleep(11 * time.Second)
		settled(t, "both running without pressure", func() bool {
			return phase(uid).GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING &&
				phase(guaranteedUID).GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING
		})
		if c := e.s.PressureConditions(); len(c) != 0 {
			t.Errorf("conditions %v without pressure", c)
		}

		node.setMemoryAvailable(400 << 20)
		time.Sleep(10 * time.Second)
		settled(t, "the hog Failed with reason Evicted", func() bool {
			return phase(uid).GetPhase() == syncpodv1.PodPhase_POD_PHASE_FAILED && phase(uid).GetReason() == "Evicted"
		})
		want := "The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. " +
			"Container app was using 300Mi, request is 0, has larger consumption of memory. "
		if got := phase(uid).GetMessage(); got != want {
			t.Errorf("message %q, want %q", got, want)
		}
		if c := e.s.PressureConditions(); len(c) != 1 || c[0] != "MemoryPressure" {
			t.Errorf("conditions %v, want MemoryPressure", c)
		}
		// the Node's conditions come from the same round.
		if nc, on := e.s.NodeConditions(); !on || len(nc) != 3 || !nc[0].Status || nc[0].Reason != "KubeletHasInsufficientMemory" ||
			len(nc[0].Signals) != 1 || nc[0].Signals[0] != evictionplan.MemoryAvailable || nc[1].Status || nc[2].Status {
			t.Errorf("node conditions %+v (on %v), want MemoryPressure for memory.available only", nc, on)
		}
		var disruption bool
		for _, c := range phase(uid).GetConditions() {
			disruption = disruption || (c.GetType() == "DisruptionTarget" && c.GetReason() == "TerminationByKubelet")
		}
		if !disruption {
			t.Errorf("no DisruptionTarget condition: %v", phase(uid).GetConditions())
		}
		applies, _ := snapshot(e.exec)
		var kills []string
		for _, a := range applies {
			if a.GetActions().GetKillPod() {
				kills = append(kills, a.GetPod().GetName())
				if g := a.GetActions().GetKillGracePeriodOverrideSeconds(); g != 1 {
					t.Errorf("kill of %s with grace %d, want 1", a.GetPod().GetName(), g)
				}
			}
		}
		if len(kills) != 1 || kills[0] != "web" {
			t.Fatalf("kills %v, want the hog's only", kills)
		}

		// The hog stopped; memory is back: nothing else is evicted.
		o := runningObserved(uid)
		o.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
		o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
		o.Containers[0].Id, o.Sandboxes[0].Id, o.Containers[0].SandboxId = "c-web", "sb-web", "sb-web"
		e.pleg.set(o)
		node.setMemoryAvailable(3 << 30)
		time.Sleep(time.Minute)
		synctest.Wait()
		if p := phase(guaranteedUID); p.GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING {
			t.Errorf("the Guaranteed pod: %v", p)
		}
		n := 0
		for _, ev := range func() []*syncpodv1.Event {
			rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: uid})
			return rec.GetEvents()
		}() {
			if ev.GetReason() == "Evicted" {
				n += int(ev.GetCount())
				if ev.GetType() != syncpodv1.EventType_EVENT_TYPE_WARNING || ev.GetMessage() != want {
					t.Errorf("event %v", ev)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d Evicted events, want 1", n)
		}
	})
}

// startRunning stores pods and has the fake PLEG report each running.
func startRunning(t *testing.T, e *env, pods ...*syncpodv1.Pod) {
	t.Helper()
	for _, p := range pods {
		o := runningObserved(p.GetUid())
		o.Name = p.GetName()
		o.Containers[0].Id, o.Sandboxes[0].Id, o.Containers[0].SandboxId = "c-"+p.GetName(), "sb-"+p.GetName(), "sb-"+p.GetName()
		o.Containers[0].SpecHash = plan.SpecHash(p.GetSpec().GetContainers()[0])
		e.pleg.set(o)
	}
	e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
		return &executorv1.ApplyActionsResponse{}
	})
	for _, p := range pods {
		e.apply(t, p)
	}
}

// under a nodefs threshold the node's dead containers and
// unused images go first; when that is enough nothing is evicted, else the
// pod of lower priority is, with the kubelet's disk message.
func TestDiskPressureReclaimsTheNodeFirst(t *testing.T) {
	ths, err := evictionplan.Parse(evictionplan.Config{Hard: "nodefs.available<10%"})
	if err != nil {
		t.Fatal(err)
	}
	low := evictionplan.Signals{NodeFsAvailableBytes: 5 << 30, NodeFsCapacityBytes: 100 << 30}
	roomy := evictionplan.Signals{NodeFsAvailableBytes: 50 << 30, NodeFsCapacityBytes: 100 << 30}
	for _, tc := range []struct {
		name    string
		read    func(i int) evictionplan.Signals
		evicted string
	}{
		{"the dead containers were enough", func(i int) evictionplan.Signals {
			if i == 0 {
				return low
			}
			return roomy
		}, ""},
		{"still short: the lower priority pod goes", func(int) evictionplan.Signals { return low }, "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				node := &fakeNode{read: tc.read, stats: map[string]*syncpodv1.PodStats{
					uid:           {PodUid: uid, WritableLayerBytes: 1 << 20},
					guaranteedUID: {PodUid: guaranteedUID, WritableLayerBytes: 900 << 20},
				}}
				e := newEnvWith(t, func(o *Options) {
					o.EvictionCheckPeriod = 10 * time.Second
					o.Pressure = Pressure{Thresholds: ths, Host: node, Stats: node, Images: node, TransitionPeriod: 5 * time.Minute}
				})
				low := webPod()
				high := webPod()
				high.Uid, high.Name, high.Spec.Priority = guaranteedUID, "important", new(int32(1000))
				startRunning(t, e, low, high)
				time.Sleep(11 * time.Second)
				synctest.Wait()
				node.mu.Lock()
				reads, gcs := node.reads, node.imageGCs
				node.mu.Unlock()
				if reads < 2 || gcs < 1 {
					t.Errorf("%d reads of the signals and %d image collections, want one read before and one after the reclaim, which collects images", reads, gcs)
				}
				applies, _ := snapshot(e.exec)
				var kills []string
				for _, a := range applies {
					if a.GetActions().GetKillPod() {
						kills = append(kills, a.GetPod().GetName())
					}
				}
				if tc.evicted == "" {
					if len(kills) != 0 {
						t.Errorf("kills %v, want none", kills)
					}
					return
				}
				if len(kills) != 1 || kills[0] != tc.evicted {
					t.Fatalf("kills %v, want %s only", kills, tc.evicted)
				}
				rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: uid})
				want := "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 5Gi. "
				if st := rec.GetStatus(); st.GetReason() != "Evicted" || st.GetMessage() != want {
					t.Errorf("status %q %q, want Evicted %q", st.GetReason(), st.GetMessage(), want)
				}
			})
		})
	}
}
