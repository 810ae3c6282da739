package containerdtest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
)

// TestHarnessSmoke proves the harness end to end with the kubelet's own CRI
// client: the images are present, a host-network sandbox runs, a busybox
// container exits with the code its script chose, its log holds its output,
// and everything is removed again.
func TestHarnessSmoke(t *testing.T) {
	rs := containerdtest.RuntimeService(t)
	is := containerdtest.ImageService(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	ver, err := rs.Version(ctx, "v1")
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	if ver.GetRuntimeName() != "containerd" || ver.GetRuntimeApiVersion() != "v1" {
		t.Errorf("Version = %s %s (CRI %s), want containerd with CRI v1", ver.GetRuntimeName(), ver.GetRuntimeVersion(), ver.GetRuntimeApiVersion())
	}

	for _, img := range []string{containerdtest.PauseImage(), containerdtest.BusyboxImage()} {
		st, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: img}, false)
		if err != nil {
			t.Fatalf("ImageStatus %s: %v", img, err)
		}
		if st.GetImage() == nil {
			t.Fatalf("image %s is not imported (make containerd-up imports it; nothing is ever pulled)", img)
		}
	}

	sbCfg := containerdtest.HostNetworkSandboxConfig(t)
	podID := containerdtest.RunSandbox(t, rs, sbCfg)

	ctrCfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "smoke"},
		Image:    &runtimeapi.ImageSpec{Image: containerdtest.BusyboxImage()},
		Command:  []string{"sh", "-c", "echo hi; exit 3"},
		LogPath:  "smoke.log",
	}
	ctrID, err := rs.CreateContainer(ctx, podID, ctrCfg, sbCfg)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rs.StartContainer(ctx, ctrID); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	st := containerdtest.WaitContainerState(t, rs, ctrID, runtimeapi.ContainerState_CONTAINER_EXITED, time.Minute)
	if st.GetExitCode() != 3 {
		t.Errorf("exit code = %d, want 3 (reason %q, message %q)", st.GetExitCode(), st.GetReason(), st.GetMessage())
	}

	// CRI log format: "<RFC3339Nano> stdout F hi".
	logData, err := os.ReadFile(filepath.Join(sbCfg.GetLogDirectory(), ctrCfg.GetLogPath()))
	if err != nil {
		t.Fatalf("container log: %v", err)
	}
	if !strings.Contains(string(logData), " stdout F hi\n") {
		t.Errorf("container log = %q, want a stdout line %q", logData, "hi")
	}

	if err := rs.RemoveContainer(ctx, ctrID); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	containerdtest.RemoveSandbox(t, rs, podID)
	left, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: podID})
	if err != nil {
		t.Fatalf("ListPodSandbox: %v", err)
	}
	if len(left) != 0 {
		t.Errorf("sandbox %s still listed after removal: %v", podID, left)
	}
}
