package crisim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BenchmarkContainerEvent measures one container's STARTED event, built
// and delivered to one subscriber, in a sandbox of n containers. Its time
// and bytes per event must not grow with n.
func BenchmarkContainerEvent(b *testing.B) {
	for _, n := range []int{1, 100, 3000} {
		b.Run(fmt.Sprintf("sandbox=%d", n), func(b *testing.B) {
			r, err := New(Options{Mode: ModeSimulated, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Shutdown()
			ctx := context.Background()
			sbResp, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
				Metadata: &runtimeapi.PodSandboxMetadata{Name: "wide", Namespace: "ns", Uid: "uid"}}})
			if err != nil {
				b.Fatal(err)
			}
			sb := sbResp.GetPodSandboxId()
			if _, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
				b.Fatal(err)
			}
			var id string
			for i := range n {
				resp, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
					Metadata: &runtimeapi.ContainerMetadata{Name: fmt.Sprintf("c%d", i)}, Image: &runtimeapi.ImageSpec{Image: "img"},
					Labels: map[string]string{"io.kubernetes.container.name": fmt.Sprintf("c%d", i)}}})
				if err != nil {
					b.Fatal(err)
				}
				id = resp.GetContainerId()
			}
			s, err := r.events.subscribe()
			if err != nil {
				b.Fatal(err)
			}
			defer r.events.unsubscribe(s)
			r.mu.Lock()
			c, sbx := r.containers[id], r.sandboxes[sb]
			r.mu.Unlock()
			var sent int
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r.mu.Lock()
				r.publishLocked(c.id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, sbx)
				r.mu.Unlock()
				ev := <-s.ch
				sent += len(ev.GetContainersStatuses())
			}
			b.ReportMetric(float64(sent)/float64(b.N), "statuses/event")
		})
	}
}
