package crisim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StopContainer sends the config's stop signal to the process
// (SIGTERM when it names none), and SIGKILL only once the timeout passed.
// Each process traps its signal number and exits with a code of its own.
func TestStopContainerSendsTheConfiguredStopSignal(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	sb := sandboxFor(t, r, "stopsig")
	if _, err := r.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		signal runtimeapi.Signal
		trap   int // the host signal number the process traps
	}{
		{"default-term", runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT, 15},
		{"usr1", runtimeapi.Signal_SIGNAL_SIGUSR1, 10},
		{"quit", runtimeapi.Signal_SIGNAL_SIGQUIT, 3},
		{"rtmin-3", runtimeapi.Signal_SIGNAL_SIGRTMINPLUS3, 37},
		{"rtmax-1", runtimeapi.Signal_SIGNAL_SIGRTMAXMINUS1, 63},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the trapped signal makes it exit 42; any other stop
			// signal kills it (or is ignored until SIGKILL).
			ready := filepath.Join(t.TempDir(), "ready")
			script := fmt.Sprintf("trap 'exit 42' %d; touch %s; while :; do sleep 0.05; done", tc.trap, ready)
			resp, err := r.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: tc.name}, Image: &runtimeapi.ImageSpec{Image: "img"},
				Command: []string{"sh", "-c", script}, LogPath: tc.name + ".log", StopSignal: tc.signal}})
			if err != nil {
				t.Fatal(err)
			}
			id := resp.GetContainerId()
			if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the process never trapped its signal")
				}
			}
			st, err := r.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.signal
			if want == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
				want = runtimeapi.Signal_SIGNAL_SIGTERM
			}
			if got := st.GetStatus().GetStopSignal(); got != want {
				t.Errorf("status stop signal %v, want %v", got, want)
			}
			if _, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 30}); err != nil {
				t.Fatal(err)
			}
			if got := waitExited(t, r, id); got.GetExitCode() != 42 {
				t.Errorf("exit code %d, want 42 (the trap of signal %d)", got.GetExitCode(), tc.trap)
			}
		})
	}
}
