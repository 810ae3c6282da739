package crisim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BenchmarkSimulatedLifecycle measures one simulated container's create,
// start, stop and remove, in memory only and with a state dir (four
// atomic file writes or removals), so the cost of persistence shows.
func BenchmarkSimulatedLifecycle(b *testing.B) {
	for _, persist := range []bool{false, true} {
		b.Run(fmt.Sprintf("state=%v", persist), func(b *testing.B) {
			opts := Options{Mode: ModeSimulated, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if persist {
				opts.StateDir = b.TempDir()
			}
			r, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Shutdown()
			ctx := context.Background()
			sbResp, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
				Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "uid"}}})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				resp, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sbResp.GetPodSandboxId(), Config: &runtimeapi.ContainerConfig{
					Metadata: &runtimeapi.ContainerMetadata{Name: "c", Attempt: uint32(i)}, Image: &runtimeapi.ImageSpec{Image: "img"}}})
				if err != nil {
					b.Fatal(err)
				}
				id := resp.GetContainerId()
				if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
					b.Fatal(err)
				}
				if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
					b.Fatal(err)
				}
				if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
