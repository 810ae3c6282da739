package containerdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
)

// Names of the environment variables of the contract (see the package doc).
const (
	EnvEndpoint = "SYNCPOD_TEST_CONTAINERD_ENDPOINT"
	// EnvNodeEndpoint names a containerd for the tests that run a whole
	// syncpod node on it (NodeEndpoint).
	EnvNodeEndpoint = "SYNCPOD_TEST_NODE_CONTAINERD_ENDPOINT"
	EnvPauseImage   = "SYNCPOD_TEST_PAUSE_IMAGE"
	EnvBusyboxImage = "SYNCPOD_TEST_BUSYBOX_IMAGE"
	EnvRequire      = "SYNCPOD_TEST_REQUIRE_CONTAINERD"
	EnvPLEGMode     = "SYNCPOD_TEST_CONTAINERD_PLEG_MODE"
)

// Image names used when the environment does not name them; mk/containerd.mk
// builds and imports these.
const (
	DefaultPauseImage   = "localhost/syncpod/pause:3.10"
	DefaultBusyboxImage = "localhost/syncpod/busybox:1.36"
)

// ConnectTimeout bounds connecting to containerd and its first CRI Version
// answer.
const ConnectTimeout = 5 * time.Second

// CallTimeout bounds each call of the clients RuntimeService and
// ImageService return (cri-client puts its connection timeout on every
// call): a RunPodSandbox or StartContainer has taken seconds on a loaded
// machine.
const CallTimeout = 30 * time.Second

// Required reports whether an unreachable containerd must fail tests rather
// than skip them (SYNCPOD_TEST_REQUIRE_CONTAINERD=1, set by make in CI and
// when running as root).
func Required() bool {
	return os.Getenv(EnvRequire) == "1"
}

// ExpectedPLEGMode is the mode ("relist" or "evented") a PLEG must reach on
// the test containerd, from SYNCPOD_TEST_CONTAINERD_PLEG_MODE; "" when the
// environment does not say (then nothing is checked).
func ExpectedPLEGMode() string {
	return os.Getenv(EnvPLEGMode)
}

// PauseImage is the sandbox (pause) image containerd is configured with.
func PauseImage() string {
	if v := os.Getenv(EnvPauseImage); v != "" {
		return v
	}
	return DefaultPauseImage
}

// BusyboxImage is the image for test containers: no Entrypoint, Cmd ["sh"],
// busybox applets in /bin.
func BusyboxImage() string {
	if v := os.Getenv(EnvBusyboxImage); v != "" {
		return v
	}
	return DefaultBusyboxImage
}

// unavailable skips t, or fails it when containerd is required.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("containerd required (%s=1) but unavailable: %s; start it with `make containerd-up`, log in .tmp/containerd/containerd.log", EnvRequire, msg)
		return
	}
	// Loud: also on stderr, which `go test` shows even without -v for a
	// single package.
	fmt.Fprintf(os.Stderr, "!!! SKIP %s: no containerd: %s (run `make containerd-up` as root, then `source .tmp/containerd/env`)\n", t.Name(), msg)
	t.Skipf("SKIP: no containerd: %s (run `make containerd-up` as root, then `source .tmp/containerd/env`)", msg)
}

// Endpoint returns the CRI endpoint of the test containerd after checking it
// answers CRI Version within ConnectTimeout. When it does not, the test is
// skipped, or failed when Required.
func Endpoint(t testing.TB) string {
	t.Helper()
	return endpoint(t, ConnectTimeout)
}

// NodeEndpoint is Endpoint for a test that runs a whole syncpod node on
// containerd: the containerd of EnvNodeEndpoint when it is set, else
// EnvEndpoint's. A node kills the pods it does not know, as the kubelet
// does, so it must not share a containerd with tests of other packages
// running at the same time (make test gives such tests a containerd of
// their own), nor with another node: the caller serialises its nodes.
func NodeEndpoint(t testing.TB) string {
	t.Helper()
	if os.Getenv(EnvNodeEndpoint) != "" {
		return endpointOf(t, EnvNodeEndpoint, ConnectTimeout)
	}
	return endpoint(t, ConnectTimeout)
}

func endpoint(t testing.TB, timeout time.Duration) string {
	t.Helper()
	return endpointOf(t, EnvEndpoint, timeout)
}

func endpointOf(t testing.TB, env string, timeout time.Duration) string {
	t.Helper()
	ep := os.Getenv(env)
	if ep == "" {
		unavailable(t, "%s is not set", env)
		return ""
	}
	if path, ok := strings.CutPrefix(ep, "unix://"); ok {
		if _, err := os.Stat(path); err != nil {
			unavailable(t, "socket %s: %v", path, err)
			return ""
		}
	}
	rs, err := dialRuntime(t.Context(), ep, timeout)
	if err != nil {
		unavailable(t, "%s does not answer CRI Version: %v", ep, err)
		return ""
	}
	_ = rs.Close(context.Background())
	return ep
}

func dialRuntime(ctx context.Context, endpoint string, timeout time.Duration) (internalapi.RuntimeService, error) {
	return remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(timeout).
		WithTracerProvider(nil).
		WithUseStreaming(false). // containerd 1.6 has no CRI list streaming
		Build(ctx)
}

// RuntimeService connects the kubelet's CRI runtime client to the test
// containerd (skipping or failing as Endpoint does) and closes it when the
// test ends. Every call's timeout is CallTimeout unless the caller's ctx
// is shorter.
func RuntimeService(t testing.TB) internalapi.RuntimeService {
	t.Helper()
	ep := Endpoint(t)
	rs, err := dialRuntime(t.Context(), ep, CallTimeout)
	if err != nil {
		t.Fatalf("connect runtime service %s: %v", ep, err)
	}
	t.Cleanup(func() { _ = rs.Close(context.Background()) })
	return rs
}

// ImageService connects the kubelet's CRI image client to the test
// containerd and closes it when the test ends.
func ImageService(t testing.TB) internalapi.ImageManagerService {
	t.Helper()
	ep := Endpoint(t)
	is, err := remote.NewRemoteImageServiceBuilder().
		WithEndpoint(ep).
		WithConnectionTimeout(CallTimeout).
		WithTracerProvider(nil).
		WithUseStreaming(false).
		Build(t.Context())
	if err != nil {
		t.Fatalf("connect image service %s: %v", ep, err)
	}
	t.Cleanup(func() { _ = is.Close(context.Background()) })
	return is
}

var nonLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// UniqueName returns a DNS-1123 label derived from the test name with a
// random suffix, so sandboxes of repeated or concurrent runs never collide.
func UniqueName(t testing.TB) string {
	t.Helper()
	base := strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "-")
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random suffix: %v", err)
	}
	return base + "-" + hex.EncodeToString(b[:])
}

// HostNetworkSandboxConfig returns a sandbox config in the host network
// namespace (the only kind the test containerd can run), with a unique
// name and UID and a log directory under t.TempDir().
func HostNetworkSandboxConfig(t testing.TB) *runtimeapi.PodSandboxConfig {
	t.Helper()
	name := UniqueName(t)
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      name,
			Namespace: "syncpod-test",
			Uid:       "uid-" + name,
		},
		LogDirectory: t.TempDir(),
		Labels:       map[string]string{"io.syncpod.test": "true"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_NODE,
				},
			},
		},
	}
}

// RunSandbox runs a sandbox from cfg and registers a cleanup that stops
// and removes it (and with it its containers) when the test ends.
func RunSandbox(t testing.TB, rs internalapi.RuntimeService, cfg *runtimeapi.PodSandboxConfig) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	id, err := rs.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatalf("RunPodSandbox %s: %v", cfg.GetMetadata().GetName(), err)
	}
	t.Cleanup(func() { RemoveSandbox(t, rs, id) })
	return id
}

// RemoveSandbox stops and removes sandbox id, reporting failures as test
// errors. Removing an already removed sandbox is not an error.
func RemoveSandbox(t testing.TB, rs internalapi.RuntimeService, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Listing first keeps a second removal quiet (the CRI client logs every
	// failed call, NotFound included).
	if found, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: id}); err == nil && len(found) == 0 {
		return
	}
	if err := rs.StopPodSandbox(ctx, id); err != nil && status.Code(err) != codes.NotFound {
		t.Errorf("StopPodSandbox %s: %v", id, err)
	}
	if err := rs.RemovePodSandbox(ctx, id); err != nil && status.Code(err) != codes.NotFound {
		t.Errorf("RemovePodSandbox %s: %v", id, err)
	}
}

// WaitContainerState polls ContainerStatus until container id is in state
// want or timeout passes, and returns the last status.
func WaitContainerState(t testing.TB, rs internalapi.RuntimeService, id string, want runtimeapi.ContainerState, timeout time.Duration) *runtimeapi.ContainerStatus {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *runtimeapi.ContainerStatus
	for {
		ctx, cancel := context.WithTimeout(t.Context(), ConnectTimeout)
		resp, err := rs.ContainerStatus(ctx, id, false)
		cancel()
		if err == nil {
			last = resp.GetStatus()
			if last.GetState() == want {
				return last
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s not %s within %s: last state %s, err %v", id, want, timeout, last.GetState(), err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}
