package crisim

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/prometheus/procfs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Container and sandbox statistics, read from the host process tree: a
// container in process mode is a process group, so its CPU time and
// memory are the sums over the group's processes in /proc. Working set
// and RSS are both the group's resident memory (there is no cgroup to
// tell active from inactive file pages). Simulated containers report
// zeros.

// statsSampler remembers each container's last CPU reading, so that a
// stats call reports the usage rate since the previous call (in
// nanocores), as cAdvisor does; the first call reports the average since
// the container started.
type statsSampler struct {
	mu   sync.Mutex
	prev map[string]cpuSample
}

type cpuSample struct {
	at    int64  // unix ns
	usage uint64 // cumulative CPU ns
}

func newStatsSampler() *statsSampler { return &statsSampler{prev: map[string]cpuSample{}} }

// rate records a reading and returns the usage rate in nanocores.
func (s *statsSampler) rate(id string, now int64, usage uint64, startedAt int64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, ok := s.prev[id]
	s.prev[id] = cpuSample{at: now, usage: usage}
	if !ok || prev.at >= now || prev.usage > usage {
		prev = cpuSample{at: startedAt}
	}
	if now <= prev.at {
		return 0
	}
	return uint64(float64(usage-prev.usage) * 1e9 / float64(now-prev.at))
}

// forget drops readings of containers that no longer exist.
func (s *statsSampler) forget(keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.prev {
		if !keep[id] {
			delete(s.prev, id)
		}
	}
}

// groupUsage is what /proc says about one process group.
type groupUsage struct {
	cpuNanos uint64
	rssBytes uint64
	procs    uint64
}

// readProcessGroups sums CPU time and resident memory per process group.
func readProcessGroups() (map[int]groupUsage, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("reading /proc: %w", err)
	}
	out := map[int]groupUsage{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // the process ended meanwhile
		}
		u := out[st.PGRP]
		u.cpuNanos += uint64(st.CPUTime() * 1e9)
		u.rssBytes += uint64(st.ResidentMemory())
		u.procs++
		out[st.PGRP] = u
	}
	return out, nil
}

// processGroup is the process group of a running container in process
// mode, whether crisim started it directly or under a shim (which makes
// the container's first process its group's leader).
func processGroup(c *container) (int, bool) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return 0, false
	}
	switch p := c.run.(type) {
	case *procRunner:
		return p.pgid, true
	case *shimRunner:
		return p.rec.PID, true
	}
	return 0, false
}

// containerStatsLocked builds one container's stats; r.mu is held.
func (r *Runtime) containerStatsLocked(c *container, groups map[int]groupUsage, now int64) *runtimeapi.ContainerStats {
	var u groupUsage
	if pgid, ok := processGroup(c); ok {
		u = groups[pgid]
	}
	cs := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: c.id, Metadata: c.meta, Labels: c.labels, Annotations: c.annotations},
		Cpu: &runtimeapi.CpuUsage{Timestamp: now,
			UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: u.cpuNanos},
			UsageNanoCores:       &runtimeapi.UInt64Value{Value: r.stats.rate(c.id, now, u.cpuNanos, c.startedAt)}},
		Memory: &runtimeapi.MemoryUsage{Timestamp: now,
			WorkingSetBytes: &runtimeapi.UInt64Value{Value: u.rssBytes},
			RssBytes:        &runtimeapi.UInt64Value{Value: u.rssBytes},
			UsageBytes:      &runtimeapi.UInt64Value{Value: u.rssBytes}},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: now, UsedBytes: &runtimeapi.UInt64Value{}, InodesUsed: &runtimeapi.UInt64Value{}},
	}
	return cs
}

// ContainerStats reports one container's CPU and memory use.
func (r *Runtime) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	cs, err := statsOf(r, r.containers, "container", req.GetContainerId(), r.containerStatsLocked)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: cs}, nil
}

// ListContainerStats reports the CPU and memory use of the containers the
// filter selects.
func (r *Runtime) ListContainerStats(_ context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f := req.GetFilter()
	stats, err := listStats(r, r.containers, func(c *container) bool {
		return (f.GetId() == "" || c.id == f.GetId()) && (f.GetPodSandboxId() == "" || c.sandboxID == f.GetPodSandboxId()) && labelsMatch(c.labels, f.GetLabelSelector())
	}, r.containerStatsLocked, func(cs *runtimeapi.ContainerStats) string { return cs.GetAttributes().GetId() }, r.forgetGoneLocked)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: stats}, nil
}

// forgetGoneLocked drops CPU readings of removed containers.
func (r *Runtime) forgetGoneLocked() {
	keep := make(map[string]bool, len(r.containers))
	for id := range r.containers {
		keep[id] = true
	}
	r.stats.forget(keep)
}

// sandboxStatsLocked sums a sandbox's containers; r.mu is held.
func (r *Runtime) sandboxStatsLocked(sb *sandbox, groups map[int]groupUsage, now int64) *runtimeapi.PodSandboxStats {
	linux := &runtimeapi.LinuxPodSandboxStats{
		Cpu:     &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{}, UsageNanoCores: &runtimeapi.UInt64Value{}},
		Memory:  &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{}, RssBytes: &runtimeapi.UInt64Value{}, UsageBytes: &runtimeapi.UInt64Value{}},
		Process: &runtimeapi.ProcessUsage{Timestamp: now, ProcessCount: &runtimeapi.UInt64Value{}},
	}
	ids := make([]string, 0)
	for id, c := range r.containers {
		if c.sandboxID == sb.id {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := r.containers[id]
		cs := r.containerStatsLocked(c, groups, now)
		linux.Containers = append(linux.Containers, cs)
		linux.Cpu.UsageCoreNanoSeconds.Value += cs.GetCpu().GetUsageCoreNanoSeconds().GetValue()
		linux.Cpu.UsageNanoCores.Value += cs.GetCpu().GetUsageNanoCores().GetValue()
		linux.Memory.WorkingSetBytes.Value += cs.GetMemory().GetWorkingSetBytes().GetValue()
		linux.Memory.RssBytes.Value += cs.GetMemory().GetRssBytes().GetValue()
		linux.Memory.UsageBytes.Value += cs.GetMemory().GetUsageBytes().GetValue()
		if pgid, ok := processGroup(c); ok {
			linux.Process.ProcessCount.Value += groups[pgid].procs
		}
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{Id: sb.id, Metadata: sb.meta, Labels: sb.labels, Annotations: sb.annotations},
		Linux:      linux,
	}
}

// PodSandboxStats reports a sandbox's CPU and memory use: the sums over
// its containers, each also listed.
func (r *Runtime) PodSandboxStats(_ context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	st, err := statsOf(r, r.sandboxes, "sandbox", req.GetPodSandboxId(), r.sandboxStatsLocked)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: st}, nil
}

// ListPodSandboxStats reports the sandboxes the filter selects.
func (r *Runtime) ListPodSandboxStats(_ context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f := req.GetFilter()
	stats, err := listStats(r, r.sandboxes, func(sb *sandbox) bool {
		return (f.GetId() == "" || sb.id == f.GetId()) && labelsMatch(sb.labels, f.GetLabelSelector())
	}, r.sandboxStatsLocked, func(st *runtimeapi.PodSandboxStats) string { return st.GetAttributes().GetId() }, nil)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: stats}, nil
}

// statsOf answers a stats call for one object (a container, a sandbox):
// it reads the process groups, then, under r.mu, finds the object with
// this id in objs (NotFound naming the kind when there is none) and
// measures it with measure.
func statsOf[T, S any](r *Runtime, objs map[string]T, kind, id string, measure func(T, map[int]groupUsage, int64) S) (S, error) {
	var zero S
	groups, err := readProcessGroups()
	if err != nil {
		return zero, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := objs[id]
	if !ok {
		return zero, fmt.Errorf("%w: %s %q", ErrNotFound, kind, id)
	}
	return measure(o, groups, r.nowNano()), nil
}

// listStats answers a list-stats call: it reads the process groups, then,
// under r.mu, measures every object of objs that keep selects at one
// instant, sorted by their id; thenLocked, when set, runs before r.mu is
// released.
func listStats[T, S any](r *Runtime, objs map[string]T, keep func(T) bool, measure func(T, map[int]groupUsage, int64) S, id func(S) string, thenLocked func()) ([]S, error) {
	groups, err := readProcessGroups()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowNano()
	var out []S
	for _, o := range objs {
		if keep(o) {
			out = append(out, measure(o, groups, now))
		}
	}
	sort.Slice(out, func(i, j int) bool { return id(out[i]) < id(out[j]) })
	if thenLocked != nil {
		thenLocked()
	}
	return out, nil
}
