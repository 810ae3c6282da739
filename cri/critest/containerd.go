package critest

import (
	"context"
	"os"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/syncpod/syncpod/cri/crilabels"
)

// The environment contract of tests against a real containerd (set by
// mk/containerd.mk).
const (
	EnvEndpoint = "SYNCPOD_TEST_CONTAINERD_ENDPOINT"
	EnvBusybox  = "SYNCPOD_TEST_BUSYBOX_IMAGE"
	EnvPause    = "SYNCPOD_TEST_PAUSE_IMAGE"
	EnvRequire  = "SYNCPOD_TEST_REQUIRE_CONTAINERD"
)

// Containerd is a reachable containerd for a test.
type Containerd struct {
	// Endpoint is unix:///abs/path/containerd.sock.
	Endpoint string
	// Busybox is the busybox image reference (imported, never pulled).
	Busybox string
	// Pause is the sandbox image reference.
	Pause string
	// Runtime and Images are the kubelet's remote clients, closed at test
	// end.
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
}

// RequireContainerd returns the containerd of the environment contract.
// When it is not configured or does not answer, the test fails if
// SYNCPOD_TEST_REQUIRE_CONTAINERD=1 and is skipped (saying why) otherwise.
func RequireContainerd(t *testing.T) *Containerd {
	t.Helper()
	unusable := func(why string) {
		t.Helper()
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("containerd required (%s=1) but %s", EnvRequire, why)
		}
		t.Skipf("SKIPPING containerd integration test: %s (run `make containerd-up` and source .tmp/containerd/env, or `make test`)", why)
	}
	c := &Containerd{Endpoint: os.Getenv(EnvEndpoint), Busybox: os.Getenv(EnvBusybox), Pause: os.Getenv(EnvPause)}
	if c.Endpoint == "" || c.Busybox == "" {
		unusable(EnvEndpoint + " or " + EnvBusybox + " is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs, err := remote.NewRemoteRuntimeService(ctx, c.Endpoint, 30*time.Second, nil, false)
	if err != nil {
		unusable("containerd at " + c.Endpoint + " does not answer: " + err.Error())
	}
	is, err := remote.NewRemoteImageService(ctx, c.Endpoint, 30*time.Second, nil, false)
	if err != nil {
		_ = rs.Close(ctx)
		unusable("containerd image service at " + c.Endpoint + " does not answer: " + err.Error())
	}
	c.Runtime, c.Images = rs, is
	t.Cleanup(func() {
		_ = rs.Close(context.Background())
		_ = is.Close(context.Background())
	})
	return c
}

// CleanupPod stops and removes, at test end, every sandbox (and so every
// container) labelled with the pod uid.
func (c *Containerd) CleanupPod(t *testing.T, uid string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, _ := c.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{crilabels.PodUID: uid}})
		for _, ctr := range cs {
			_ = c.Runtime.StopContainer(ctx, ctr.GetId(), 0)
			_ = c.Runtime.RemoveContainer(ctx, ctr.GetId())
		}
		sbs, _ := c.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{crilabels.PodUID: uid}})
		for _, sb := range sbs {
			_ = c.Runtime.StopPodSandbox(ctx, sb.GetId())
			_ = c.Runtime.RemovePodSandbox(ctx, sb.GetId())
		}
	})
}
