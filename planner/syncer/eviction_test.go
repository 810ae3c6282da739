package syncer

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/syncpod/syncpod/planner/plan"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// fakeMeter answers EmptyDirUsage with the bytes set per volume name.
type fakeMeter struct {
	mu    sync.Mutex
	used  map[string]int64
	calls int
}

func (m *fakeMeter) set(name string, b int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used[name] = b
}

func (m *fakeMeter) EmptyDirUsage(_ context.Context, _ string, names []string) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	out := make([]int64, len(names))
	for i, n := range names {
		out[i] = m.used[n]
	}
	return out, nil
}

// The kubelet's eviction manager for local storage: the periodic check
// measures a running pod's sized disk emptyDirs (not the memory ones); one
// over its sizeLimit fails the pod with reason Evicted and the kubelet's
// message, once, with a Warning Evicted event, and kills it.
func TestAnEmptyDirOverItsSizeLimitEvictsThePod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meter := &fakeMeter{used: map[string]int64{}}
		e := newEnvWith(t, func(o *Options) { o.EmptyDirs, o.EvictionCheckPeriod = meter, 10*time.Second })
		p := webPod()
		p.Spec.Volumes = []*syncpodv1.Volume{
			{Name: "cache", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{SizeLimit: "1Mi"}}},
			{Name: "ram", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{SizeLimit: "1Ki",
				Medium: syncpodv1.StorageMedium_STORAGE_MEDIUM_MEMORY}}},
		}
		o := runningObserved(uid)
		o.Containers[0].SpecHash = plan.SpecHash(p.GetSpec().GetContainers()[0])
		e.pleg.set(o)
		e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			return &executorv1.ApplyActionsResponse{}
		})
		meter.set("cache", 1<<20) // at the limit: fine
		meter.set("ram", 1<<30)   // a memory emptyDir is its tmpfs's business
		pod := e.apply(t, p)
		time.Sleep(11 * time.Second)
		settled(t, "a check that evicts nothing", func() bool {
			rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
			meter.mu.Lock()
			defer meter.mu.Unlock()
			return meter.calls >= 1 && rec.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING
		})
		if a, _ := snapshot(e.exec); len(a) != 0 {
			t.Fatalf("applies under the limit: %v", a)
		}
		meter.set("cache", 1<<20+1)
		time.Sleep(10 * time.Second)
		settled(t, "Failed with reason Evicted", func() bool {
			rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
			return rec.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_FAILED && rec.GetStatus().GetReason() == "Evicted"
		})
		rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
		want := `Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `
		if got := rec.GetStatus().GetMessage(); got != want {
			t.Errorf("status message %q, want %q", got, want)
		}
		applies, _ := snapshot(e.exec)
		if len(applies) == 0 || !applies[0].GetActions().GetKillPod() {
			t.Fatalf("applies %v, want a pod kill", applies)
		}
		time.Sleep(30 * time.Second) // more checks and syncs: still one event
		synctest.Wait()
		rec, _ = e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
		n := 0
		for _, ev := range rec.GetEvents() {
			if ev.GetReason() == "Evicted" {
				n += int(ev.GetCount())
				if ev.GetType() != syncpodv1.EventType_EVENT_TYPE_WARNING || ev.GetMessage() != want {
					t.Errorf("event %v", ev)
				}
			}
		}
		if n != 1 || rec.GetStatus().GetReason() != "Evicted" {
			t.Errorf("%d Evicted events (want 1), status %v", n, rec.GetStatus())
		}
	})
}
