package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/executor/cgroups"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// the sandbox carries the pod's resources without the overhead,
// and the overhead as a guaranteed amount, as the kubelet computes them.
func TestSandboxResources(t *testing.T) {
	rl := func(cpu, mem string) *syncpodv1.ResourceList { return &syncpodv1.ResourceList{Cpu: cpu, Memory: mem} }
	tests := []struct {
		name          string
		spec          *syncpodv1.PodSpec
		res, overhead *runtimeapi.LinuxContainerResources
	}{
		{
			// requests 300m -> shares 307; limit 1 CPU -> quota 100000
			name: "containers",
			spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{
				{Name: "a", Resources: &syncpodv1.ResourceRequirements{Requests: rl("100m", "10Mi"), Limits: rl("500m", "20Mi")}},
				{Name: "b", Resources: &syncpodv1.ResourceRequirements{Requests: rl("200m", ""), Limits: rl("500m", "30Mi")}},
			}},
			res:      &runtimeapi.LinuxContainerResources{CpuShares: 307, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: 50 << 20},
			overhead: &runtimeapi.LinuxContainerResources{},
		},
		{
			// pod-level limits only: the requests default to them
			name: "pod-level limits and an overhead",
			spec: &syncpodv1.PodSpec{
				Resources:  &syncpodv1.ResourceRequirements{Limits: rl("2", "1Gi")},
				Overhead:   rl("100m", "16Mi"),
				Containers: []*syncpodv1.Container{{Name: "a"}},
			},
			res:      &runtimeapi.LinuxContainerResources{CpuShares: 2048, CpuPeriod: 100000, CpuQuota: 200000, MemoryLimitInBytes: 1 << 30},
			overhead: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 10000, MemoryLimitInBytes: 16 << 20},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, overhead := sandboxResources(&syncpodv1.Pod{Uid: "u", Spec: tt.spec})
			if !proto.Equal(res, tt.res) || !proto.Equal(overhead, tt.overhead) {
				t.Errorf("got %v / %v, want %v / %v", res, overhead, tt.res, tt.overhead)
			}
		})
	}
}

// a container without a limit of its own gets the pod-level one;
// its CPU shares stay those of its own (absent) request.
func TestContainerBoundedByPod(t *testing.T) {
	pod := &syncpodv1.Pod{Uid: "u", Name: "p", Spec: &syncpodv1.PodSpec{
		Resources: &syncpodv1.ResourceRequirements{Limits: &syncpodv1.ResourceList{Cpu: "1500m", Memory: "256Mi"}},
		Containers: []*syncpodv1.Container{
			{Name: "free", Image: "busybox"},
			{Name: "own", Image: "busybox", Resources: &syncpodv1.ResourceRequirements{Limits: &syncpodv1.ResourceList{Cpu: "500m"}}},
		},
	}}
	want := map[string]*runtimeapi.LinuxContainerResources{
		"free": {CpuShares: 2, CpuPeriod: 100000, CpuQuota: 150000, MemoryLimitInBytes: 256 << 20},
		"own":  {CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 256 << 20},
	}
	for _, c := range pod.Spec.Containers {
		cfg, err := ContainerConfig(pod, c, false, "h", 0, ContainerOptions{MemoryCapacity: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		r := cfg.GetLinux().GetResources()
		w := want[c.Name]
		if r.GetCpuShares() != w.CpuShares || r.GetCpuQuota() != w.CpuQuota || r.GetCpuPeriod() != w.CpuPeriod || r.GetMemoryLimitInBytes() != w.MemoryLimitInBytes {
			t.Errorf("%s: resources %v, want %v", c.Name, r, w)
		}
	}
}

// a runtime that answers RuntimeConfig with no Linux
// configuration (crisim, which the in-memory runtime answers as) has no
// cgroups: the pod starts and no cgroup is made.
func TestNoCgroupsOnARuntimeWithout(t *testing.T) {
	e := newEnv(t, busybox)
	fsRoot := t.TempDir()
	for _, h := range []string{"cpu", "memory"} {
		if err := os.MkdirAll(filepath.Join(fsRoot, h), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fsRoot, h, "cgroup.procs"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	e.r, err = New(Config{
		Runtime: runtimeclient.NewRuntime(e.rt, nil, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(e.img, nil, runtimeclient.Timeouts{}),
		Backoff: e.store, Clock: e.clock, LogDir: e.logDir,
		Cgroups: CgroupOptions{PerQOS: true, FSRoot: fsRoot},
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod(nil, ctr("app"))
	resp := e.apply(t, pod, &syncpodv1.ObservedPod{Uid: pod.GetUid()}, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: starts("app")})
	mustSucceedSteps(t, resp)
	for _, h := range []string{"cpu", "memory"} {
		if _, err := os.Stat(filepath.Join(fsRoot, h, "kubepods")); err == nil {
			t.Errorf("%s: kubepods made on a runtime without cgroups", h)
		}
	}
	if e.r.resolvedCgroups() != nil {
		t.Error("a cgroup manager on a runtime without cgroups")
	}
}

// answering is the in-memory runtime answering RuntimeConfig as told.
type answering struct {
	*critest.Runtime
	resp *runtimeapi.RuntimeConfigResponse
	err  error
}

func (a answering) RuntimeConfig(context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return a.resp, a.err
}

// the cgroup driver is the runtime's answer to
// RuntimeConfig, the configured one when it has none to give; the pod's
// cgroup is made, named for it, before the sandbox; on first use the
// cgroup of a pod the runtime has no sandbox of is removed; the pod's
// cgroup goes with its last sandbox.
func TestCgroupDriverFromTheRuntime(t *testing.T) {
	linux := func(d runtimeapi.CgroupDriver) *runtimeapi.RuntimeConfigResponse {
		return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: d}}
	}
	unimplemented := status.Error(codes.Unimplemented, "unknown method RuntimeConfig")
	tests := []struct {
		name       string
		resp       *runtimeapi.RuntimeConfigResponse
		err        error
		configured cgroups.Driver
		podDir     string // under <hierarchy>/
		orphanDir  string
	}{
		{name: "runtime says cgroupfs", resp: linux(runtimeapi.CgroupDriver_CGROUPFS), configured: cgroups.Systemd,
			podDir: "t/kubepods/besteffort/poduid-1", orphanDir: "t/kubepods/burstable/podgone"},
		{name: "runtime says systemd", resp: linux(runtimeapi.CgroupDriver_SYSTEMD),
			podDir:    "t.slice/t-kubepods.slice/t-kubepods-besteffort.slice/t-kubepods-besteffort-poduid_1.slice",
			orphanDir: "t.slice/t-kubepods.slice/t-kubepods-podgone.slice"},
		{name: "runtime without RuntimeConfig, systemd configured", err: unimplemented, configured: cgroups.Systemd,
			podDir: "t.slice/t-kubepods.slice/t-kubepods-besteffort.slice/t-kubepods-besteffort-poduid_1.slice"},
		{name: "runtime without RuntimeConfig, nothing configured", err: unimplemented,
			podDir: "t/kubepods/besteffort/poduid-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, busybox)
			fsRoot := t.TempDir()
			for _, h := range []string{"cpu", "memory"} {
				mustFile(t, filepath.Join(fsRoot, h, "cgroup.procs"))
			}
			if tt.orphanDir != "" {
				mustFile(t, filepath.Join(fsRoot, "memory", tt.orphanDir, "cgroup.procs"))
			}
			rt := answering{Runtime: e.rt, resp: tt.resp, err: tt.err}
			var err error
			e.r, err = New(Config{
				Runtime: runtimeclient.NewRuntime(rt, nil, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(e.img, nil, runtimeclient.Timeouts{}),
				Backoff: e.store, Clock: e.clock, LogDir: e.logDir,
				Cgroups: CgroupOptions{PerQOS: true, FSRoot: fsRoot, Root: "/t", Driver: tt.configured},
			})
			if err != nil {
				t.Fatal(err)
			}
			pod := testPod(nil, ctr("app"))
			resp := e.apply(t, pod, &syncpodv1.ObservedPod{Uid: pod.GetUid()}, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: starts("app")})
			mustSucceedSteps(t, resp)
			for _, h := range []string{"cpu", "memory"} {
				if _, err := os.Stat(filepath.Join(fsRoot, h, tt.podDir)); err != nil {
					t.Errorf("%s: no pod cgroup: %v", h, err)
				}
			}
			if got := e.r.resolvedCgroups().Parent(pod); got != "/"+tt.podDir {
				t.Errorf("cgroup parent %s, want /%s", got, tt.podDir)
			}
			if tt.orphanDir != "" {
				if _, err := os.Stat(filepath.Join(fsRoot, "memory", tt.orphanDir)); err == nil {
					t.Error("the cgroup of a pod with no sandbox was kept")
				}
			}
			mustSucceedSteps(t, e.apply(t, pod, e.observe(t, pod.GetUid()), &syncpodv1.PodActions{KillPod: true}))
			o := e.observe(t, pod.GetUid())
			var ids []string
			for _, c := range o.GetContainers() {
				ids = append(ids, c.GetId())
			}
			if _, err := e.r.RemoveResources(context.Background(), ids, []string{resp.GetSandboxId()}, nil); err != nil {
				t.Fatal(err)
			}
			for _, h := range []string{"cpu", "memory"} {
				if _, err := os.Stat(filepath.Join(fsRoot, h, tt.podDir)); err == nil {
					t.Errorf("%s: pod cgroup left after its sandbox was removed", h)
				}
			}
		})
	}
}

func mustFile(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSucceedSteps(t *testing.T, resp *executorv1.ApplyActionsResponse) {
	t.Helper()
	for _, s := range resp.GetSteps() {
		if s.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
			t.Fatalf("step %v: %v %s", s.GetStep(), s.GetOutcome(), s.GetMessage())
		}
	}
}
