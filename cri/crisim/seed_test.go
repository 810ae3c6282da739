package crisim

import (
	"context"
	"errors"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestSeededObjectsBehaveAsCreatedOnes: a seeded sandbox reserves its
// metadata; a seeded running container stops as a created one does
// (SIGTERM, 143); re-seeding replaces an object in place; Forget drops a
// sandbox with its containers; process mode refuses a running seed.
func TestSeededObjectsBehaveAsCreatedOnes(t *testing.T) {
	ctx := context.Background()
	r, _ := newTestRuntime(t, Options{Mode: ModeSimulated})
	md := &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}
	if err := r.SeedSandbox(&runtimeapi.PodSandboxStatus{Id: "sb", Metadata: md, State: runtimeapi.PodSandboxState_SANDBOX_READY}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: md}}); !errors.Is(err, ErrReserved) {
		t.Errorf("RunPodSandbox with a seeded sandbox's metadata: %v, want ErrReserved", err)
	}
	if err := r.SeedContainer("nope", &runtimeapi.ContainerStatus{Id: "c"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a container of an unknown sandbox: %v, want ErrNotFound", err)
	}
	running := &runtimeapi.ContainerStatus{Id: "c", Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: 5}
	if err := r.SeedContainer("sb", running); err != nil {
		t.Fatal(err)
	}
	if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "c"}); err != nil {
		t.Fatal(err)
	}
	st, err := r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "c"})
	if err != nil || st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetStatus().GetExitCode() != 143 {
		t.Fatalf("seeded container after StopContainer: %v %v, want EXITED 143", st.GetStatus(), err)
	}
	running.CreatedAt = 9
	if err := r.SeedContainer("sb", running); err != nil {
		t.Fatal(err)
	}
	st, _ = r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "c"})
	if st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || st.GetStatus().GetCreatedAt() != 9 {
		t.Errorf("re-seeded container %v, want RUNNING created at 9", st.GetStatus())
	}
	r.Forget("sb")
	if l, _ := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); len(l.GetContainers()) != 0 {
		t.Errorf("containers after forgetting their sandbox: %v", l.GetContainers())
	}
	if _, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: md}}); err != nil {
		t.Errorf("the forgotten sandbox's metadata is still reserved: %v", err)
	}

	p, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	if err := p.SeedSandbox(&runtimeapi.PodSandboxStatus{Id: "sb", Metadata: md}); err != nil {
		t.Fatal(err)
	}
	if err := p.SeedContainer("sb", running); !errors.Is(err, ErrFailedPrecondition) {
		t.Errorf("a running seed in process mode: %v, want ErrFailedPrecondition", err)
	}
}
