package pleg

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/pleg/evented"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// benchRuntime has n containers, two per pod.
func benchRuntime(n int) *critest.Runtime {
	rt := critest.NewRuntime()
	for i := range n / 2 {
		uid := fmt.Sprintf("pod-%05d", i)
		sb := "sb-" + uid
		rt.AddPodSandbox(uid, sb, 0, int64(i+1))
		rt.AddPodContainer(sb, "c1-"+uid, "app", "h", 0, int64(i+2))
		rt.AddPodContainer(sb, "c2-"+uid, "side", "h", 0, int64(i+3))
	}
	return rt
}

// BenchmarkRelist measures a steady-state relist (nothing changed, the
// common case every second) against the two raw list calls alone on the
// same in-memory runtime: the difference is the PLEG's own cost (grouping,
// records, diff).
func BenchmarkRelist(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		rt := benchRuntime(n)
		b.Run(fmt.Sprintf("lists-only/containers=%d", n), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if _, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: crilabels.ManagedSelector()}); err != nil {
					b.Fatal(err)
				}
				if _, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: crilabels.ManagedSelector()}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("relist/containers=%d", n), func(b *testing.B) {
			p, err := New(Options{Runtime: rt, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry(), Evented: EventedOff})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			p.Relist(ctx) // first relist inspects everything
			if got := p.cache.Len(); got != n/2 {
				b.Fatalf("cached %d pods", got)
			}
			for b.Loop() {
				if !p.Relist(ctx) {
					b.Fatal("relist failed")
				}
			}
		})
	}
}

// wideSandbox is a runtime with one pod whose sandbox holds n running
// containers, and a PLEG that has relisted it.
func wideSandbox(b *testing.B, n int) (*critest.Runtime, *PLEG) {
	b.Helper()
	rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
	rt.AddPodSandbox("wide", "sb", 0, 1)
	for i := range n {
		rt.AddPodContainer("sb", fmt.Sprintf("c%05d", i), fmt.Sprintf("app%05d", i), "h", 0, int64(10+i))
	}
	p, err := New(Options{Runtime: rt, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry(), Evented: EventedOff})
	if err != nil {
		b.Fatal(err)
	}
	if !p.Relist(context.Background()) {
		b.Fatal("relist failed")
	}
	return rt, p
}

// BenchmarkEventApply measures applying one container event about a pod
// whose sandbox holds 3,000 containers: the event as crisim sends it (only
// its container) and as containerd sends it (every container of the
// sandbox), each alone and as part of a drained backlog (batches of
// evented.MaxBatch). Events alternate STOPPED and STARTED over the
// containers, with rising creation times, and are published to one
// subscriber. ns/op is per event.
func BenchmarkEventApply(b *testing.B) {
	const n = 3000
	for _, tc := range []struct {
		name  string
		whole bool
		batch int
	}{
		{"single-container/one-at-a-time", false, 1},
		{"single-container/backlog", false, evented.MaxBatch},
		{"whole-sandbox/one-at-a-time", true, 1},
		{"whole-sandbox/backlog", true, evented.MaxBatch},
	} {
		b.Run(fmt.Sprintf("%s/containers=%d", tc.name, n), func(b *testing.B) {
			rt, p := wideSandbox(b, n)
			sub := p.Subscribe(nil)
			defer sub.Close()
			// Pre-build the statuses: building them is the runtime's cost.
			// Each event is a fresh response sharing them (Decode does not
			// modify its input).
			whole := rt.Event("c00000", "sb", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, 0)
			single := make([]*runtimeapi.ContainerEventResponse, n)
			for i := range single {
				single[i] = rt.SingleEvent(fmt.Sprintf("c%05d", i), "sb", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, 0)
			}
			at := time.Now().UnixNano()
			batch := make([]*runtimeapi.ContainerEventResponse, 0, tc.batch)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			i := 0
			for b.Loop() {
				typ := runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
				if (i/n)%2 == 1 {
					typ = runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
				}
				ev := &runtimeapi.ContainerEventResponse{ContainerId: single[i%n].ContainerId, ContainerEventType: typ,
					PodSandboxStatus: whole.PodSandboxStatus, ContainersStatuses: single[i%n].ContainersStatuses}
				if tc.whole {
					ev.ContainersStatuses = whole.ContainersStatuses
				}
				i++
				at++
				ev.CreatedAt = at
				batch = append(batch, ev)
				if len(batch) == tc.batch {
					p.applyEvents(batch)
					batch = batch[:0]
					for {
						if _, err := sub.Next(ctx); err != nil {
							break
						}
					}
				}
			}
			if len(batch) > 0 {
				p.applyEvents(batch)
			}
			b.StopTimer()
			if got := testutil.ToFloat64(p.metrics.RuntimeEvents.WithLabelValues("applied")); got != float64(i) {
				b.Fatalf("applied %v of %d events", got, i)
			}
		})
	}
}
