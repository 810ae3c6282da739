package evented

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/pleg/cache"
	"github.com/syncpod/syncpod/pleg/diff"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func names(events []diff.Event) string {
	var out []string
	for _, e := range events {
		out = append(out, strings.TrimPrefix(e.Type.String(), "POD_LIFECYCLE_EVENT_TYPE_")+" "+e.ContainerID)
	}
	return fmt.Sprint(out)
}

func TestApply(t *testing.T) {
	const t0 = int64(1_000_000_000)
	tests := []struct {
		name       string
		id         string
		typ        runtimeapi.ContainerEventType
		at         int64
		unmanaged  bool
		noSandbox  bool
		want       string
		wantCached bool  // pod present in cache afterwards
		wantExit   int32 // c1's cached exit code; -1: c1 is not cached
	}{
		{"R-14.3/started", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, t0 + 10, false, false, "[CONTAINER_STARTED c1]", true, 7},
		{"R-14.3/stopped", "c1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, t0 + 10, false, false, "[CONTAINER_DIED c1]", true, 7},
		{"R-14.3/created-updates-cache-only", "c1", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, t0 + 10, false, false, "[]", true, 7},
		{"R-14.3/deleted-container", "c1", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, t0 + 10, false, false, "[CONTAINER_DIED c1 CONTAINER_REMOVED c1]", true, -1},
		{"R-14.2/deleted-sandbox-drops-entry", "sb1", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, t0 + 10, false, false, "[CONTAINER_DIED sb1 CONTAINER_REMOVED sb1]", false, -1},
		{"R-14.2/stale-not-forwarded", "c1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, t0, false, false, "[]", true, 0},
		// A removal is final whatever its time: the stale DELETED event is
		// forwarded and removes c1, but changes nothing else.
		{"R-14.2/stale-deleted-still-forwarded-and-removes", "c1", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, t0 - 5, false, false, "[CONTAINER_DIED c1 CONTAINER_REMOVED c1]", true, -1},
		{"R-14.1/no-sandbox-ignored", "c1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, t0 + 10, false, true, "[]", true, 0},
		{"unmanaged-ignored", "c1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, t0 + 10, true, false, "[]", true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
			rt.AddPodSandbox("u1", "sb1", 0, 1)
			rt.AddPodContainer("sb1", "c1", "app", "h", 0, 2)
			c := cache.New()
			// Seed the cache with the running state at t0.
			rt.AddPodContainer("sb1", "c0", "side", "h", 0, 1)
			Apply(c, Decode(rt.Event("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, t0)))
			rt.ExitContainer("c1", 7, "Error", tc.at)
			ev := rt.Event(tc.id, "sb1", tc.typ, tc.at)
			if tc.typ == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT && tc.id == "c1" {
				ev.ContainersStatuses = nil // the deleted container is gone
			}
			if tc.unmanaged {
				delete(ev.PodSandboxStatus.Labels, "io.syncpod.managed")
			}
			if tc.noSandbox {
				ev.PodSandboxStatus = nil
			}
			_, forward := Apply(c, Decode(ev))
			if got := names(forward); got != tc.want {
				t.Errorf("events %s, want %s", got, tc.want)
			}
			pod, _ := c.Get("u1")
			if (pod != nil) != tc.wantCached {
				t.Fatalf("cached %v, want present=%v", pod, tc.wantCached)
			}
			exit := int32(-1)
			sawC0 := false
			for _, oc := range pod.GetContainers() {
				if oc.GetId() == "c1" {
					exit = oc.GetExitCode()
				}
				sawC0 = sawC0 || oc.GetId() == "c0"
			}
			if tc.wantCached && !sawC0 {
				t.Errorf("c0, which the event was not about, is gone: %v", pod.GetContainers())
			}
			if exit != tc.wantExit {
				t.Errorf("cached exit code %d, want %d", exit, tc.wantExit)
			}
		})
	}
}

func TestConsumeUnimplementedAndFailure(t *testing.T) {
	rt := critest.NewRuntime()
	err := Consume(context.Background(), rt, func([]*runtimeapi.ContainerEventResponse) { t.Error("event from an unimplemented stream") }, nil)
	if err == nil || !strings.Contains(err.Error(), "Unimplemented") {
		t.Fatalf("err = %v", err)
	}

	rt = critest.NewRuntime().WithEvents(critest.EventsOffered)
	rt.AddPodSandbox("u1", "sb1", 0, 1)
	got := make(chan string, 10)
	established := make(chan struct{})
	errc := make(chan error)
	go func() {
		errc <- Consume(context.Background(), rt, func(evs []*runtimeapi.ContainerEventResponse) {
			for _, ev := range evs {
				got <- ev.GetContainerId()
			}
		}, func() { close(established) })
	}()
	<-established
	rt.Emit(rt.Event("sb1", "sb1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, time.Now().UnixNano()))
	if id := <-got; id != "sb1" {
		t.Fatalf("got %s", id)
	}
	boom := errors.New("boom")
	rt.FailStreams(boom)
	if err := <-errc; !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

// TestApplyMergesByContainerID: crisim's events carry only the container
// they are about, containerd's every container of the sandbox; either way
// the event's statuses are merged into the cached pod by id, never taken as
// the complete list, and a DELETED event removes just its container.
func TestApplyMergesByContainerID(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event func(rt *critest.Runtime, id string, typ runtimeapi.ContainerEventType, at int64) *runtimeapi.ContainerEventResponse
	}{
		{"single-container-events", func(rt *critest.Runtime, id string, typ runtimeapi.ContainerEventType, at int64) *runtimeapi.ContainerEventResponse {
			return rt.SingleEvent(id, "sb1", typ, at)
		}},
		{"whole-sandbox-events", func(rt *critest.Runtime, id string, typ runtimeapi.ContainerEventType, at int64) *runtimeapi.ContainerEventResponse {
			return rt.Event(id, "sb1", typ, at)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
			rt.AddPodSandbox("u1", "sb1", 0, 1)
			c := cache.New()
			at := int64(100)
			for _, id := range []string{"a", "b", "c"} {
				at++
				rt.AddPodContainer("sb1", id, id, "h", 0, at)
				Apply(c, Decode(tc.event(rt, id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, at)))
			}
			at++
			rt.ExitContainer("b", 2, "Error", at)
			Apply(c, Decode(tc.event(rt, "b", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, at)))
			at++
			rt.Remove("a")
			if _, fwd := Apply(c, Decode(tc.event(rt, "a", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, at))); names(fwd) != "[CONTAINER_DIED a CONTAINER_REMOVED a]" {
				t.Errorf("deleted: forwarded %s", names(fwd))
			}
			pod, modified := c.Get("u1")
			var got []string
			for _, oc := range pod.GetContainers() {
				got = append(got, oc.GetId()+":"+oc.GetState().String())
			}
			want := "[c:CONTAINER_STATE_RUNNING b:CONTAINER_STATE_EXITED]" // newest first
			if fmt.Sprint(got) != want {
				t.Errorf("containers %v, want %s", got, want)
			}
			if len(pod.GetSandboxes()) != 1 || pod.GetName() != "pod-u1" || modified.UnixNano() != at || pod.GetObservedAt().AsTime().UnixNano() != at {
				t.Errorf("pod %v modified %d", pod, modified.UnixNano())
			}
			// The sandbox's removal takes its containers and the pod with it.
			at++
			ev := tc.event(rt, "sb1", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, at) // with its last status
			rt.Remove("sb1")
			Apply(c, Decode(ev))
			if pod, _ := c.Get("u1"); pod != nil {
				t.Errorf("pod still cached after its sandbox was deleted: %v", pod)
			}
		})
	}
}

// TestLateStoppedAfterDeletedKeepsTheRemoval: containerd 2.x may report a
// container's STOPPED event after the DELETED event of the RemoveContainer
// that followed the stop (its exit handler sends STOPPED after letting
// StopContainer return). The late event, newer than the removal, carries
// the sandbox's remaining containers only: it wakes the pod but must not
// bring the removed container back.
func TestLateStoppedAfterDeletedKeepsTheRemoval(t *testing.T) {
	const t0 = int64(1_000_000_000)
	rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
	rt.AddPodSandbox("u1", "sb1", 0, 1)
	rt.AddPodContainer("sb1", "c0", "side", "h", 0, 1)
	rt.AddPodContainer("sb1", "c1", "app", "h", 0, 2)
	c := cache.New()
	Apply(c, Decode(rt.Event("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, t0)))
	rt.ExitContainer("c1", 0, "Completed", t0+5)

	withoutC1 := func(ev *runtimeapi.ContainerEventResponse) *runtimeapi.ContainerEventResponse {
		var kept []*runtimeapi.ContainerStatus
		for _, cs := range ev.ContainersStatuses {
			if cs.GetId() != "c1" {
				kept = append(kept, cs)
			}
		}
		ev.ContainersStatuses = kept
		return ev
	}
	deleted := withoutC1(rt.Event("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, t0+10))
	if _, forward := Apply(c, Decode(deleted)); names(forward) != "[CONTAINER_DIED c1 CONTAINER_REMOVED c1]" {
		t.Fatalf("DELETED forwarded %s", names(forward))
	}
	stopped := withoutC1(rt.Event("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, t0+11))
	taken, forward := Apply(c, Decode(stopped))
	if !taken || names(forward) != "[CONTAINER_DIED c1]" {
		t.Errorf("late STOPPED: taken %v, forwarded %s; want taken, [CONTAINER_DIED c1]", taken, names(forward))
	}
	pod, _ := c.Get("u1")
	var ids []string
	for _, oc := range pod.GetContainers() {
		ids = append(ids, oc.GetId())
	}
	if fmt.Sprint(ids) != "[c0]" {
		t.Errorf("cached containers %v after the late STOPPED, want [c0]", ids)
	}
}
