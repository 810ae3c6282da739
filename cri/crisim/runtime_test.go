package crisim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/internal/proctest"
	"github.com/syncpod/syncpod/proto/fielderr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func newTestRuntime(t *testing.T, opts Options) (*Runtime, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.Registry = reg
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Shutdown)
	return r, reg
}

func sandboxFor(t *testing.T, r *Runtime, name string) string {
	t.Helper()
	resp, err := r.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: "uid-" + name}, LogDirectory: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetPodSandboxId()
}

func containerIn(t *testing.T, r *Runtime, sb, name string, cmd []string, ann map[string]string) (string, error) {
	t.Helper()
	if _, err := r.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "img"}, Command: cmd, Annotations: ann, LogPath: name + ".log"}})
	return resp.GetContainerId(), err
}

func waitExited(t *testing.T, r *Runtime, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := r.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			return resp.GetStatus()
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s still %s", id, resp.GetStatus().GetState())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// grpcError maps err as finish does.
func grpcError(err error) error { return errgrpc.ToGRPC(classify(err)) }

func TestErrorCodes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil is OK", nil, codes.OK},
		{"not found", fmt.Errorf("%w: x", ErrNotFound), codes.NotFound},
		{"reserved name", fmt.Errorf("%w: x", ErrReserved), codes.AlreadyExists},
		{"invalid", fmt.Errorf("%w: x", ErrInvalid), codes.InvalidArgument},
		{"invalid fields", validateSandboxConfig(&runtimeapi.PodSandboxConfig{}), codes.InvalidArgument},
		{"failed precondition", fmt.Errorf("%w: x", ErrFailedPrecondition), codes.FailedPrecondition},
		{"pull failed", fmt.Errorf("%w: x", ErrPullFailed), codes.NotFound},
		{"shutting down", ErrShuttingDown, codes.Unavailable},
		{"subscriber behind", fmt.Errorf("%w: x", ErrSubscriberBehind), codes.ResourceExhausted},
		{"exec timeout", fmt.Errorf("%w: x", ErrTimeout), codes.DeadlineExceeded},
		{"context deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"context canceled", context.Canceled, codes.Canceled},
		{"status passes through", status.Error(codes.Aborted, "x"), codes.Aborted},
		{"a failed start wrapping a deadline", fmt.Errorf("%w: start: %w", ErrFailedPrecondition, context.DeadlineExceeded), codes.FailedPrecondition},
		{"corrupt state is Unknown", fmt.Errorf("%w: x", ErrStateCorrupt), codes.Unknown},
		{"anything else is Unknown", errors.New("boom"), codes.Unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := grpcError(tc.err)
			if status.Code(got) != tc.want {
				t.Errorf("grpcError(%v) = %s, want %s", tc.err, status.Code(got), tc.want)
			}
			if tc.want == codes.InvalidArgument && len(fielderr.FromStatus(status.Convert(got))) == 0 {
				t.Errorf("grpcError(%v): InvalidArgument without BadRequest details", tc.err)
			}
		})
	}
}

// RuntimeConfig answers the configured cgroup driver, and no Linux
// configuration when none is configured (crisim has no cgroups, and the
// executor then makes none); an unknown one is refused at New.
func TestRuntimeConfigReportsTheCgroupDriver(t *testing.T) {
	systemd, cgroupfs := runtimeapi.CgroupDriver_SYSTEMD, runtimeapi.CgroupDriver_CGROUPFS
	tests := []struct {
		name   string
		driver *runtimeapi.CgroupDriver
	}{
		{"none configured: no Linux configuration", nil},
		{"systemd", &systemd},
		{"cgroupfs", &cgroupfs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newTestRuntime(t, Options{Mode: ModeSimulated, CgroupDriver: tc.driver})
			resp, err := r.RuntimeConfig(context.Background(), &runtimeapi.RuntimeConfigRequest{})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.driver == nil && resp.GetLinux() != nil:
				t.Errorf("Linux configuration %v, want none", resp.GetLinux())
			case tc.driver != nil && (resp.GetLinux() == nil || resp.GetLinux().GetCgroupDriver() != *tc.driver):
				t.Errorf("Linux configuration %v, want cgroup driver %s", resp.GetLinux(), *tc.driver)
			}
		})
	}
	bad := runtimeapi.CgroupDriver(7)
	_, err := New(Options{Logger: slog.New(slog.DiscardHandler), Mode: ModeSimulated, CgroupDriver: &bad})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("New with cgroup driver 7: %v, want ErrInvalid", err)
	}
}

// A running container is removed, killed first, as CRI asks: the call
// succeeds once its process has exited, and its status is NotFound.
func TestRemoveContainerKillsARunningOne(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	sb := sandboxFor(t, r, "p")
	id, err := containerIn(t, r, sb, "c", []string{"sh", "-c", `trap "" TERM; exec sleep 3600`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	run := r.containers[id].run
	r.mu.Unlock()
	if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("RemoveContainer of a running container: %v, want it killed and removed", err)
	}
	if _, err := r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id}); !errors.Is(err, ErrNotFound) {
		t.Errorf("status after removal: %v, want NotFound", err)
	}
	select {
	case <-run.exited():
	default:
		t.Error("RemoveContainer returned before the container's process exited")
	}
}

// A subscriber that stops reading is cut off with ResourceExhausted after
// receiving what was buffered; nothing is dropped silently.
func TestEventSubscriberFallsBehind(t *testing.T) {
	r, reg := newTestRuntime(t, Options{Mode: ModeSimulated, EventBuffer: 2})
	block := make(chan struct{})
	got := 0
	done := make(chan error, 1)
	go func() {
		done <- r.GetContainerEvents(context.Background(), nil, func(*runtimeapi.ContainerEventResponse) error {
			if got == 0 {
				<-block
			}
			got++
			return nil
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for r.events.count() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("subscriber never registered")
		}
		time.Sleep(time.Millisecond)
	}
	// Each sandbox publishes two events: at most one in send plus two
	// buffered can be absorbed, so the third sandbox overflows.
	for i := range 3 {
		sandboxFor(t, r, fmt.Sprintf("p%d", i))
	}
	close(block)
	err := <-done
	if !errors.Is(err, ErrSubscriberBehind) || status.Code(grpcError(err)) != codes.ResourceExhausted {
		t.Fatalf("stream ended with %v, want ResourceExhausted (subscriber behind)", err)
	}
	if got < 1 || got > 3 {
		t.Errorf("subscriber got %d events before the cut, want 1 to 3", got)
	}
	if n := testutil.ToFloat64(r.metrics.eventOverflows); n != 1 {
		t.Errorf("overflow counter = %v, want 1", n)
	}
	if r.events.count() != 0 {
		t.Errorf("%d subscribers left, want 0", r.events.count())
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Errorf("metrics lint: %v %v", probs, err)
	}
}

func TestProcessExitBySignal(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	sb := sandboxFor(t, r, "sig")
	tests := []struct {
		name string
		cmd  []string
		want int32
	}{
		{"SIGTERM death is 143", []string{"sh", "-c", "kill -TERM $$"}, 143},
		{"SIGKILL death is 137", []string{"sh", "-c", "kill -KILL $$"}, 137},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := containerIn(t, r, sb, strings.ReplaceAll(tc.name, " ", "-"), tc.cmd, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
				t.Fatal(err)
			}
			st := waitExited(t, r, id)
			if st.GetExitCode() != tc.want || st.GetReason() != "Error" {
				t.Errorf("exit %d %q, want %d Error", st.GetExitCode(), st.GetReason(), tc.want)
			}
		})
	}
}

func TestStartWithoutCommandFails(t *testing.T) {
	r, reg := newTestRuntime(t, Options{Mode: ModeProcess})
	sb := sandboxFor(t, r, "nocmd")
	id, err := containerIn(t, r, sb, "empty", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id})
	if status.Code(grpcError(err)) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no command") {
		t.Fatalf("start: %v, want FailedPrecondition saying there is no command", err)
	}
	st := waitExited(t, r, id)
	if st.GetExitCode() != 128 || st.GetReason() != "StartError" {
		t.Errorf("exit %d %q, want 128 StartError", st.GetExitCode(), st.GetReason())
	}
	want := `
# HELP syncpod_crisim_container_exits_total Container exits by reason (Completed, Error, StartError).
# TYPE syncpod_crisim_container_exits_total counter
syncpod_crisim_container_exits_total{reason="StartError"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "syncpod_crisim_container_exits_total"); err != nil {
		t.Error(err)
	}
}

func TestSimulatedAnnotations(t *testing.T) {
	r, reg := newTestRuntime(t, Options{Mode: ModeSimulated})
	sb := sandboxFor(t, r, "sim")
	_, err := containerIn(t, r, sb, "bad", nil, map[string]string{AnnotationExitAfter: "soon", AnnotationExitCode: "300", AnnotationIgnoreSIGTERM: "maybe"})
	if status.Code(grpcError(err)) != codes.InvalidArgument {
		t.Fatalf("bad annotations: %v, want InvalidArgument", err)
	}
	for _, key := range []string{AnnotationExitAfter, AnnotationExitCode, AnnotationIgnoreSIGTERM} {
		if !strings.Contains(err.Error(), strconv.Quote(key)) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
	id, err := containerIn(t, r, sb, "good", nil, map[string]string{AnnotationExitAfter: "10ms", AnnotationExitCode: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if st := waitExited(t, r, id); st.GetExitCode() != 7 || st.GetReason() != "Error" {
		t.Errorf("exit %d %q, want 7 Error", st.GetExitCode(), st.GetReason())
	}
	want := `
# HELP syncpod_crisim_containers Containers by state (created, running, exited).
# TYPE syncpod_crisim_containers gauge
syncpod_crisim_containers{state="created"} 0
syncpod_crisim_containers{state="exited"} 1
syncpod_crisim_containers{state="running"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "syncpod_crisim_containers"); err != nil {
		t.Error(err)
	}
}

func TestUnpullable(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Unpullable: regexp.MustCompile(`(^|/)unpullable([:@]|$)`)})
	tests := []struct {
		image string
		want  codes.Code
	}{
		{"example.com/unpullable:1", codes.NotFound},
		{"unpullable", codes.NotFound},
		{"example.com/app:1", codes.OK},
		{"example.com/unpullable-not:1", codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.image, func(t *testing.T) {
			_, err := r.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: tc.image}})
			if got := status.Code(grpcError(err)); got != tc.want {
				t.Errorf("PullImage(%s) = %v, want %s", tc.image, err, tc.want)
			}
		})
	}
}

func TestShutdownKillsProcessGroups(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	sb := sandboxFor(t, r, "shutdown")
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	script := fmt.Sprintf(`trap "" TERM; sleep 3600 & echo $$ $! > %s.tmp; mv %s.tmp %s; wait`, pids, pids, pids)
	id, err := containerIn(t, r, sb, "tree", []string{"sh", "-c", script}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	tree := proctest.ReadPIDs(t, pids, 30*time.Second) // the shell and its sleep
	r.Shutdown()
	proctest.WaitGone(t, 30*time.Second, "after Shutdown", tree...)
	if _, err := r.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "late", Uid: "late"}}}); status.Code(grpcError(err)) != codes.Unavailable {
		t.Errorf("RunPodSandbox after Shutdown: %v, want Unavailable", err)
	}
}

func TestValidationReportsAllProblems(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Mode: ModeSimulated})
	_, err := r.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{}}})
	if status.Code(grpcError(err)) != codes.InvalidArgument || !strings.Contains(err.Error(), "config.metadata.name") || !strings.Contains(err.Error(), "config.metadata.uid") {
		t.Errorf("RunPodSandbox(empty metadata) = %v, want InvalidArgument naming name and uid", err)
	}
	_, err = r.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{Config: &runtimeapi.ContainerConfig{
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{RunAsGroup: &runtimeapi.Int64Value{Value: 3000}}}}})
	for _, field := range []string{"pod_sandbox_id", "config.metadata.name", "config.image.image", "config.linux.security_context.run_as_group"} {
		if !strings.Contains(fmt.Sprint(err), field) {
			t.Errorf("CreateContainer(empty) = %v, want it to name %s", err, field)
		}
	}
}

// A container being stopped is sent its stop signal once: a StopContainer
// that comes while an earlier one's grace period runs (a client that
// restarted and asks again) waits for the same exit, and the kill at the
// end of the first grace period happens even when its caller has gone.
func TestAStopInFlightIsNotSignalledAgain(t *testing.T) {
	tests := []struct {
		name string
		// second is the timeout of a second StopContainer, or -1 for none:
		// the container must then die of the first stop's kill alone.
		firstGrace, second time.Duration
	}{
		{"a second stop with a shorter timeout brings the kill forward", time.Hour, time.Second},
		{"no second stop: the first one's kill comes though its caller left", time.Second, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
			terms := filepath.Join(t.TempDir(), "terms")
			id, err := containerIn(t, r, sandboxFor(t, r, "p"), "c", []string{"sh", "-c",
				`trap "echo TERM >> ` + terms + `" TERM; echo up > ` + terms + `.up; while true; do sleep 0.05; done`}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
				t.Fatal(err)
			}
			waitFile(t, terms+".up")
			ctx, cancel := context.WithCancel(context.Background())
			first := make(chan error, 1)
			go func() {
				_, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: int64(tc.firstGrace / time.Second)})
				first <- err
			}()
			waitFile(t, terms)
			cancel() // the caller goes away
			if err := <-first; !errors.Is(err, context.Canceled) {
				t.Fatalf("first stop after its caller left: %v, want context.Canceled", err)
			}
			if tc.second >= 0 {
				if _, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: int64(tc.second / time.Second)}); err != nil {
					t.Fatalf("second stop: %v", err)
				}
			}
			if st := waitExited(t, r, id); st.GetExitCode() != 137 {
				t.Errorf("exit code %d, want 137 (killed at the end of the grace period)", st.GetExitCode())
			}
			if b, _ := os.ReadFile(terms); strings.Count(string(b), "TERM") != 1 {
				t.Errorf("the container noted %q, want one TERM", b)
			}
		})
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
