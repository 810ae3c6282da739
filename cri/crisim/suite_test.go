package crisim_test

import (
	"context"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	"github.com/syncpod/syncpod/cri/crisim/crisuite"
)

// crisimTarget runs a fresh crisim in mode for each test, over its real
// unix socket; persistent ones keep state on disk and run containers
// under shims (this test binary, see TestMain), as syncpod-crisim does.
func crisimTarget(mode crisim.Mode, persistent bool) crisuite.Factory {
	return func(t *testing.T) *crisuite.Target {
		opts := crisim.Options{Mode: mode, Unpullable: regexp.MustCompile("unpullable")}
		if persistent {
			opts.StateDir = t.TempDir()
			opts.Shim = &crisim.Shim{Path: os.Args[0], Env: []string{"CRISIM_TEST_AS_SHIM=1"}}
			opts.KillOnShutdown = true
		}
		ep, _ := crisimtest.Start(t, opts)
		rs, is := crisimtest.Clients(t, ep)
		return &crisuite.Target{
			Runtime: rs,
			Images:  is,
			Image:   "example.local/any:1",
			Caps: crisuite.Caps{
				Simulated:          mode == crisim.ModeSimulated,
				RemoveRunningFails: true,
				FakePodIP:          true,
				SandboxEvents:      true,
				TermKills:          true,
			},
		}
	}
}

func TestCRISuiteProcess(t *testing.T) {
	t.Parallel() // each case starts its own crisim
	crisuite.Run(t, crisimTarget(crisim.ModeProcess, false))
}

func TestCRISuiteSimulated(t *testing.T) {
	t.Parallel() // each case starts its own crisim
	crisuite.Run(t, crisimTarget(crisim.ModeSimulated, false))
}

// The suite against containers run by shims, with state on disk.
func TestCRISuiteProcessPersistent(t *testing.T) {
	t.Parallel() // each case starts its own crisim
	crisuite.Run(t, crisimTarget(crisim.ModeProcess, true))
}

func TestCRISuiteSimulatedPersistent(t *testing.T) {
	t.Parallel() // each case starts its own crisim
	crisuite.Run(t, crisimTarget(crisim.ModeSimulated, true))
}

// The containerd variant follows the harness contract of mk/containerd.mk:
// SYNCPOD_TEST_CONTAINERD_ENDPOINT (unix:///abs/path),
// SYNCPOD_TEST_BUSYBOX_IMAGE, SYNCPOD_TEST_PAUSE_IMAGE (used by the
// harness's containerd config), and SYNCPOD_TEST_REQUIRE_CONTAINERD=1 to
// fail instead of skipping when containerd is not reachable.
func TestCRISuiteContainerd(t *testing.T) {
	ep := os.Getenv("SYNCPOD_TEST_CONTAINERD_ENDPOINT")
	image := os.Getenv("SYNCPOD_TEST_BUSYBOX_IMAGE")
	required := os.Getenv("SYNCPOD_TEST_REQUIRE_CONTAINERD") == "1"
	unavailable := func(format string, args ...any) {
		if required {
			t.Fatalf("SYNCPOD_TEST_REQUIRE_CONTAINERD=1 but "+format, args...)
		}
		t.Skipf("SKIPPING the CRI suite against containerd: "+format+" (run `make test`, which starts containerd, to include it)", args...)
	}
	if ep == "" || image == "" {
		unavailable("SYNCPOD_TEST_CONTAINERD_ENDPOINT or SYNCPOD_TEST_BUSYBOX_IMAGE is unset")
	}
	c, err := net.DialTimeout("unix", strings.TrimPrefix(ep, "unix://"), 2*time.Second)
	if err != nil {
		unavailable("containerd at %s is not reachable: %v", ep, err)
	}
	c.Close()
	crisuite.Run(t, func(t *testing.T) *crisuite.Target {
		rs, is := crisimtest.Clients(t, ep)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if v, err := rs.Version(ctx, "v1"); err != nil {
			unavailable("Version at %s: %v", ep, err)
		} else {
			t.Logf("runtime under test: %s %s", v.GetRuntimeName(), v.GetRuntimeVersion())
		}
		return &crisuite.Target{Runtime: rs, Images: is, Image: image, Caps: crisuite.Caps{NoContainerEvents: true}}
	})
}

// TestListContainers2000Simulated is the load test: 2,000 simulated
// containers listed in one ListContainers call over the socket. It logs
// the time; it asserts only the count.
func TestListContainers2000Simulated(t *testing.T) {
	t.Parallel()
	const n = 2000
	ep, _ := crisimtest.Start(t, crisim.Options{Mode: crisim.ModeSimulated})
	rs, is := crisimtest.Clients(t, ep)
	ctx := context.Background()
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	const perPod = 4
	created := time.Now()
	for p := range n / perPod {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod", Namespace: "load", Uid: "uid-" + itoa(p)},
			Labels: map[string]string{"io.syncpod.managed": "true"}}
		sb, err := rs.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		for c := range perPod {
			id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "c" + itoa(c)}, Image: &runtimeapi.ImageSpec{Image: "img"},
				Labels: map[string]string{"io.syncpod.managed": "true"}}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if c%2 == 0 {
				if err := rs.StartContainer(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Logf("created %d simulated containers in %d sandboxes in %s", n, n/perPod, time.Since(created))
	t0 := time.Now()
	got, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.syncpod.managed": "true"}})
	took := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("ListContainers returned %d containers, want %d", len(got), n)
	}
	t.Logf("ListContainers of %d simulated containers over the unix socket took %s", n, took)
}

// BenchmarkListContainers2000 measures one ListContainers call returning
// 2,000 simulated containers through k8s.io/cri-client.
func BenchmarkListContainers2000(b *testing.B) {
	ep, _ := crisimtest.Start(b, crisim.Options{Mode: crisim.ModeSimulated})
	rs, is := crisimtest.Clients(b, ep)
	ctx := context.Background()
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}, nil, nil); err != nil {
		b.Fatal(err)
	}
	for p := range 500 {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod", Namespace: "load", Uid: "uid-" + itoa(p)}}
		sb, err := rs.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			b.Fatal(err)
		}
		for c := range 4 {
			if _, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "c" + itoa(c)}, Image: &runtimeapi.ImageSpec{Image: "img"}}, cfg); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		got, err := rs.ListContainers(ctx, nil)
		if err != nil || len(got) != 2000 {
			b.Fatalf("%d, %v", len(got), err)
		}
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{digits[i%10]}, b...)
	}
	return string(b)
}
