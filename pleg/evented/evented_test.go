package evented

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/pleg/cache"
	"github.com/syncpod/syncpod/pleg/plegtest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func names(res Result) string {
	var out []string
	for _, e := range res.Events {
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
		{"R-14.2/stale-deleted-still-forwarded", "c1", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, t0 - 5, false, false, "[CONTAINER_DIED c1 CONTAINER_REMOVED c1]", true, 0},
		{"R-14.1/no-sandbox-ignored", "c1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, t0 + 10, false, true, "[]", true, 0},
		{"unmanaged-ignored", "c1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, t0 + 10, true, false, "[]", true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := plegtest.NewRuntime(plegtest.EventsOffered)
			rt.AddSandbox("u1", "sb1", 0, 1)
			rt.AddContainer("sb1", "c1", "app", "h", 0, 2)
			c := cache.New()
			// Seed the cache with the running state at t0.
			Apply(c, rt.Event("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, t0))
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
			res := Apply(c, ev)
			if got := names(res); got != tc.want {
				t.Errorf("events %s, want %s", got, tc.want)
			}
			pod, _ := c.Get("u1")
			if (pod != nil) != tc.wantCached {
				t.Fatalf("cached %v, want present=%v", pod, tc.wantCached)
			}
			exit := int32(-1)
			for _, oc := range pod.GetContainers() {
				if oc.GetId() == "c1" {
					exit = oc.GetExitCode()
				}
			}
			if exit != tc.wantExit {
				t.Errorf("cached exit code %d, want %d", exit, tc.wantExit)
			}
		})
	}
}

func TestConsumeUnimplementedAndFailure(t *testing.T) {
	rt := plegtest.NewRuntime(plegtest.EventsUnimplemented)
	err := Consume(context.Background(), rt, func(*runtimeapi.ContainerEventResponse) { t.Error("event from an unimplemented stream") }, nil)
	if err == nil || !strings.Contains(err.Error(), "Unimplemented") {
		t.Fatalf("err = %v", err)
	}

	rt = plegtest.NewRuntime(plegtest.EventsOffered)
	rt.AddSandbox("u1", "sb1", 0, 1)
	got := make(chan string, 10)
	established := make(chan struct{})
	errc := make(chan error)
	go func() {
		errc <- Consume(context.Background(), rt, func(ev *runtimeapi.ContainerEventResponse) { got <- ev.GetContainerId() }, func() { close(established) })
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
