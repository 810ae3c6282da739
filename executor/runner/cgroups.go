package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/cgroups"
	"github.com/syncpod/syncpod/proto/podresources"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// CgroupOptions configure the pod and QoS cgroups.
type CgroupOptions struct {
	// PerQOS makes the kubelet's hierarchy (--cgroups-per-qos); off, the
	// sandboxes get no cgroup parent and the runtime places them.
	PerQOS bool
	// Root is the kubelet's --cgroup-root: the node cgroup is
	// <Root>/kubepods. Empty means "/".
	Root string
	// Driver is used when the runtime does not answer CRI RuntimeConfig
	// (containerd before 1.7); empty means cgroupfs. A runtime that
	// answers decides, as it does for the kubelet.
	Driver cgroups.Driver
	// FSRoot is where the cgroup filesystems are mounted; empty means
	// /sys/fs/cgroup.
	FSRoot string
}

// podCgroups resolves the cgroup manager on first use: the runtime is
// dialled lazily, and its cgroup driver is known only once it answers.
type podCgroups struct {
	opts    CgroupOptions
	mu      sync.Mutex
	done    bool
	m       *cgroups.Manager // nil once done: no pod cgroups
	nodeCPU int64
	nodeMem int64
}

// cgroupManager returns the manager, resolving it first: the driver from
// CRI RuntimeConfig (a runtime that answers with no Linux configuration,
// as crisim does, has no cgroups: none are made), the cgroups of pods no
// sandbox is left of removed. Nil with no error means no pod cgroups.
func (r *Runner) cgroupManager(ctx context.Context) (*cgroups.Manager, error) {
	c := r.cg
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.m, nil
	}
	driver := c.opts.Driver
	if driver == "" {
		driver = cgroups.Cgroupfs
	}
	resp, err := r.rt.RuntimeConfig(ctx)
	switch {
	case status.Code(err) == codes.Unimplemented:
		r.log.Info("the runtime does not say which cgroup driver it uses; using the configured one", "cgroup_driver", driver)
	case err != nil:
		return nil, fmt.Errorf("asking the runtime for its cgroup driver: %w", err)
	case resp.GetLinux() == nil:
		r.log.Warn("the runtime reports no Linux cgroup driver (it has no cgroups): pod and QoS cgroups are not made")
		c.done = true
		return nil, nil
	case resp.GetLinux().GetCgroupDriver() == runtimeapi.CgroupDriver_SYSTEMD:
		driver = cgroups.Systemd
	default:
		driver = cgroups.Cgroupfs
	}
	m, err := cgroups.New(cgroups.Options{
		FSRoot: c.opts.FSRoot, CgroupRoot: c.opts.Root, Driver: driver,
		NodeMilliCPU: c.nodeCPU, NodeMemory: c.nodeMem, NodePIDs: nodePIDs(), Logger: r.log,
	})
	if err != nil {
		return nil, fmt.Errorf("pod cgroups: %w (run with --cgroups-per-qos=false to leave the pods' placement to the runtime)", err)
	}
	sandboxes, err := r.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, sb := range sandboxes {
		live[sb.GetMetadata().GetUid()] = true
	}
	if err := m.Init(func(uid string) bool { return live[uid] }); err != nil {
		// Cgroups still holding processes stay; the node cgroups exist.
		r.log.Warn("cannot remove every cgroup of pods that are gone", "err", err)
	}
	r.log.Info("pod cgroups", "cgroup_driver", driver, "cgroup_v2", m.V2(), "node_cgroup", m.NodePath())
	c.m, c.done = m, true
	return m, nil
}

// resolvedCgroups is the manager once resolved, else nil; it never asks
// the runtime.
func (r *Runner) resolvedCgroups() *cgroups.Manager {
	if r.cg == nil {
		return nil
	}
	r.cg.mu.Lock()
	defer r.cg.mu.Unlock()
	return r.cg.m
}

// ensurePodCgroup makes the pod's cgroup and returns it as the
// sandbox's cgroup parent; "" when there are no pod cgroups.
func (p *pass) ensurePodCgroup(ctx context.Context) (string, error) {
	m, err := p.r.cgroupManager(ctx)
	if m == nil || err != nil {
		return "", err
	}
	parent, err := m.Ensure(p.pod)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		err = fmt.Errorf("%w (the executor makes pod cgroups as the kubelet does: run it as root with the cgroup filesystem writable, or with --cgroups-per-qos=false)", err)
	}
	return parent, err
}

// removePodCgroup removes the cgroup of a pod none of whose sandboxes is
// left; a failure is logged and retried by the next removal or
// start.
func (r *Runner) removePodCgroup(ctx context.Context, uid string) {
	m, err := r.cgroupManager(ctx)
	if m == nil || err != nil {
		return
	}
	if err := m.Remove(uid); err != nil {
		r.log.Warn("cannot remove the pod cgroup", "pod_uid", uid, "err", err)
	}
}

// nodePIDs is the node's process ID limit (kernel.pid_max), 0 when it
// cannot be read.
func nodePIDs() int64 {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// nodeMilliCPU is the node's CPU count in millicores.
func nodeMilliCPU() int64 { return int64(runtime.NumCPU()) * 1000 }

// linuxResources is the kubelet's calculateLinuxResources with CFS quota
// enforced: shares from the CPU request (from the limit when no request
// is set), the 100 ms period, a quota from the CPU limit (0: none) and
// the memory limit (0: none).
func linuxResources(cpuRequest int64, hasCPURequest bool, cpuLimit, memLimit int64) *runtimeapi.LinuxContainerResources {
	shareFrom := cpuRequest
	if !hasCPURequest {
		shareFrom = cpuLimit
	}
	return &runtimeapi.LinuxContainerResources{
		CpuShares:          int64(cgroups.MilliCPUToShares(shareFrom)),
		CpuPeriod:          cgroups.QuotaPeriod,
		CpuQuota:           cgroups.MilliCPUToQuota(cpuLimit, cgroups.QuotaPeriod),
		MemoryLimitInBytes: memLimit,
	}
}

// sandboxResources are what the kubelet tells the runtime with the
// sandbox: the pod's requests and limits without the overhead,
// and the overhead itself as a guaranteed amount (request = limit).
func sandboxResources(pod *syncpodv1.Pod) (res, overhead *runtimeapi.LinuxContainerResources) {
	o := podresources.Options{ExcludeOverhead: true}
	req, lim := podresources.PodRequests(pod, o), podresources.PodLimits(pod, o)
	res = linuxResources(req.MilliCPU, req.HasCPU, lim.MilliCPU, lim.Memory)
	overhead = &runtimeapi.LinuxContainerResources{}
	if pod.GetSpec().GetOverhead() != nil {
		oh := podresources.Parse(pod.GetSpec().GetOverhead())
		overhead = linuxResources(oh.MilliCPU, true, oh.MilliCPU, oh.Memory)
	}
	return res, overhead
}

// boundedByPod is c's resources with, when the pod sets pod-level
// resources, the pod-level limit standing in for each limit c leaves
// unset: the kubelet gives such a container the pod's limit.
func boundedByPod(pod *syncpodv1.Pod, c *syncpodv1.Container) *syncpodv1.ResourceRequirements {
	r := c.GetResources()
	if !podresources.PodLevelSet(pod) {
		return r
	}
	pl := podresources.PodLevel(pod).Limits
	lim := r.GetLimits()
	cpu, mem := lim.GetCpu(), lim.GetMemory()
	if cpu == "" && pl.HasCPU && pl.MilliCPU != 0 {
		cpu = resource.NewMilliQuantity(pl.MilliCPU, resource.DecimalSI).String()
	}
	if mem == "" && pl.HasMemory && pl.Memory != 0 {
		mem = resource.NewQuantity(pl.Memory, resource.BinarySI).String()
	}
	if cpu == lim.GetCpu() && mem == lim.GetMemory() {
		return r
	}
	req := &syncpodv1.ResourceList{Cpu: r.GetRequests().GetCpu(), Memory: r.GetRequests().GetMemory()}
	if req.Cpu == "" && lim.GetCpu() == "" {
		// No request of its own: its shares stay the minimum, not the
		// pod's limit (the kubelet's request is the API server's
		// default, the container's own limit, here unset).
		req.Cpu = "0"
	}
	return &syncpodv1.ResourceRequirements{Requests: req, Limits: &syncpodv1.ResourceList{Cpu: cpu, Memory: mem}}
}

// cgroupResizer is the runner's PodResizer when none is configured: the
// pod cgroup's half of an in-place resize, through the cgroup
// manager; a no-op without pod cgroups.
type cgroupResizer struct{ r *Runner }

// GrowPod raises the pod cgroup's limits of resource that rise.
func (c cgroupResizer) GrowPod(ctx context.Context, pod *syncpodv1.Pod, resource string) error {
	return c.stage(ctx, pod, resource, true)
}

// ShrinkPod writes the pod cgroup's final values of resource.
func (c cgroupResizer) ShrinkPod(ctx context.Context, pod *syncpodv1.Pod, resource string) error {
	return c.stage(ctx, pod, resource, false)
}

func (c cgroupResizer) stage(ctx context.Context, pod *syncpodv1.Pod, resource string, grow bool) error {
	m, err := c.r.cgroupManager(ctx)
	if m == nil || err != nil {
		return err
	}
	return m.ResizeStage(pod, resource, grow)
}
