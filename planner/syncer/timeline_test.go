package syncer

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/executor/executortest"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/validate"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestSyncTimelineRecordsTriggerStagesAndCRICalls: a container death
// reported by the PLEG triggers a sync whose timeline names the trigger
// and its event time, and holds queued, status_read, plan, executor (then
// the executor's CRI calls, inside it) and status_written, in that order.
func TestSyncTimelineRecordsTriggerStagesAndCRICalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.pleg.set(runningObserved(uid))
		pod := e.apply(t, webPod())
		settled(t, "a first sync", func() bool { return e.s.Timeline().Last(pod.GetUid()) != nil })

		died := runningObserved(uid)
		died.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
		died.Containers[0].FinishedAt = timestamppb.Now()
		e.pleg.set(died)
		e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			return &executorv1.ApplyActionsResponse{CriCalls: []*executorv1.CriCallTiming{
				{Operation: "create_container", StartedAt: timestamppb.Now(), Duration: durationpb.New(time.Millisecond)},
				{Operation: "start_container", StartedAt: timestamppb.Now(), Duration: durationpb.New(time.Millisecond)},
			}}
		})
		eventAt := time.Now().Add(-5 * time.Millisecond)
		e.pleg.events <- &plegv1.PodLifecycleEvent{PodUid: uid, Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED,
			ContainerId: "c1", Time: timestamppb.New(eventAt)}
		settled(t, "a sync that called the executor", func() bool { a, _ := snapshot(e.exec); return len(a) == 1 })

		tl := e.s.Timeline().Last(pod.GetUid())
		if tl.GetTrigger() != "pleg:CONTAINER_DIED" || !tl.GetEventAt().AsTime().Equal(eventAt) || tl.GetError() != "" {
			t.Fatalf("timeline trigger %q event_at %v error %q", tl.GetTrigger(), tl.GetEventAt().AsTime(), tl.GetError())
		}
		var names []string
		for _, st := range tl.GetStages() {
			names = append(names, st.GetName())
		}
		want := []string{"queued", "status_read", "plan", "executor", "cri:create_container", "cri:start_container", "status_written"}
		if fmt.Sprint(names) != fmt.Sprint(want) {
			t.Fatalf("stages %v, want %v", names, want)
		}
	})
}

// blockingKills is an executor whose KillPod passes last until released,
// as a pod whose containers ignore SIGTERM lasts its grace period; it
// counts the kills in progress.
type blockingKills struct {
	execClient
	release chan struct{}

	mu      sync.Mutex
	killing int
}

func (b *blockingKills) ApplyActions(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions, cfg Config) (*executorv1.ApplyActionsResponse, error) {
	if actions.GetKillPod() {
		b.mu.Lock()
		b.killing++
		b.mu.Unlock()
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return b.execClient.ApplyActions(ctx, pod, observed, actions, cfg)
}

// TestDeletionsAreNotSerializedBehindGrace_R9_4: deleting more pods than
// the syncs the workers run at once (16) kills every one of them at once:
// a sync waiting out a pod's grace period gives its place back, so no
// deletion queues behind another pod's grace period.
func TestDeletionsAreNotSerializedBehindGrace_R9_4(t *testing.T) {
	const pods = 24
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		b := &blockingKills{execClient: execClient{e.exec}, release: make(chan struct{})}
		e.s.opts.Executor = b
		e.exec.SetApplyAnswer(func(req *executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			if req.GetActions().GetKillPod() {
				o := runningObserved(req.GetPod().GetUid())
				o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
				o.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
				e.pleg.set(o) // what the PLEG sees after the kill
			}
			return &executorv1.ApplyActionsResponse{}
		})
		var uids []string
		for i := range pods {
			id := fmt.Sprintf("6f1c2a3b-0d4e-4f5a-8b6c-7d8e9f0a1b%02d", i)
			o := runningObserved(id)
			e.pleg.set(o)
			p := webPod()
			p.Uid, p.Name = id, fmt.Sprintf("web-%d", i)
			uids = append(uids, e.apply(t, p).GetUid())
		}
		settled(t, "every pod synced once", func() bool {
			for _, id := range uids {
				if e.pleg.getCount(id) == 0 {
					return false
				}
			}
			return true
		})
		for _, id := range uids {
			if _, err := e.store.MarkDeleted(context.Background(), &plannerv1.PodRef{Uid: id}, nil); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		b.mu.Lock()
		killing := b.killing
		b.mu.Unlock()
		if killing != pods {
			t.Fatalf("%d pods being killed at once, want all %d", killing, pods)
		}
		close(b.release)
		settled(t, "every deleted pod removed", func() bool {
			recs, err := e.store.List(context.Background(), store.Filter{})
			return err == nil && len(recs) == 0
		})
	})
}

// TestPodStoredBeforeTheLoopWaitsForAStatusNewerThanItsStart: a pod
// stored before this planner's loop began (a previous planner may have
// acted on it, and the PLEG may hold an older picture) is first read with
// newer_than the loop's start; a pod stored after it is read with none,
// so its first sync does not wait for an on-demand relist.
func TestPodStoredBeforeTheLoopWaitsForAStatusNewerThanItsStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl := &fakePLEG{observed: map[string]*syncpodv1.ObservedPod{}, gets: map[string]int{}, newer: map[string][]time.Time{}, events: make(chan *plegv1.PodLifecycleEvent, 16)}
		st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "p.db"), Validate: validate.Pod})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		before, _, err := st.Apply(context.Background(), webPod())
		if err != nil {
			t.Fatal(err)
		}
		pl.set(runningObserved(before.GetUid()))
		time.Sleep(time.Second)
		s, err := New(Options{Store: st, PLEG: plegClient{pl}, Executor: execClient{&executortest.Executor{}},
			ResyncPeriod: time.Hour, HousekeepingPeriod: time.Hour, RPCTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		start := time.Now()
		time.Sleep(time.Second)
		after := webPod()
		after.Uid, after.Name = "", "later"
		later, _, err := st.Apply(context.Background(), after)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if nt := pl.newerThans(before.GetUid()); len(nt) == 0 || !nt[0].Equal(start) {
			t.Errorf("pod stored before the loop: newer_than %v, want the loop's start %v first", nt, start)
		}
		if nt := pl.newerThans(later.GetUid()); len(nt) == 0 || !nt[0].Equal(time.Unix(0, 0).UTC()) {
			t.Errorf("pod stored after the loop started: newer_than %v, want unset first", nt)
		}
	})
}
