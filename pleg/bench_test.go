package pleg

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/syncpod/syncpod/pleg/plegtest"
	"github.com/syncpod/syncpod/proto/crilabels"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// benchRuntime has n containers, two per pod.
func benchRuntime(n int) *plegtest.Runtime {
	rt := plegtest.NewRuntime(plegtest.EventsUnimplemented)
	for i := range n / 2 {
		uid := fmt.Sprintf("pod-%05d", i)
		sb := "sb-" + uid
		rt.AddSandbox(uid, sb, 0, int64(i+1))
		rt.AddContainer(sb, "c1-"+uid, "app", "h", 0, int64(i+2))
		rt.AddContainer(sb, "c2-"+uid, "side", "h", 0, int64(i+3))
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
