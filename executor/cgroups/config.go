package cgroups

import (
	"strconv"

	"github.com/syncpod/syncpod/proto/podresources"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The kubelet's CPU constants.
const (
	MinShares      = 2
	MaxShares      = 262144
	SharesPerCPU   = 1024
	QuotaPeriod    = 100000 // µs, the kubelet's cpuCFSQuotaPeriod default
	MinQuotaPeriod = 1000
	// MemoryThrottlingFactor is the kubelet's memoryThrottlingFactor
	// default, which places a pod's memory.high on cgroup v2.
	MemoryThrottlingFactor = 0.9
	// PageSize rounds memory.high down (the kernel's unit).
	PageSize = 4096
)

// Config is what is written into one cgroup; a nil field is left as it
// is (the kubelet's ResourceConfig, CPU and memory only).
type Config struct {
	CPUShares *uint64
	CPUQuota  *int64
	CPUPeriod *uint64
	Memory    *int64
	// PidsLimit is pids.max.
	PidsLimit *int64
	// Unified are cgroup v2 files written as they are (memory.high,
	// memory.low, memory.min); ignored on v1.
	Unified map[string]string
}

// MilliCPUToShares is the kubelet's conversion of a CPU request to
// cpu.shares: 1024 per CPU, within 2..262144, 2 for no request.
func MilliCPUToShares(milli int64) uint64 {
	if milli == 0 {
		return MinShares
	}
	s := milli * SharesPerCPU / 1000
	switch {
	case s < MinShares:
		return MinShares
	case s > MaxShares:
		return MaxShares
	}
	return uint64(s)
}

// MilliCPUToQuota is the kubelet's CFS quota of a CPU limit for period
// (µs): 0 for no limit, at least 1000.
func MilliCPUToQuota(milli, period int64) int64 {
	if milli == 0 {
		return 0
	}
	return max(milli*period/1000, MinQuotaPeriod)
}

// SharesToWeight is the kubelet's cgroup v2 cpu.weight of cpu.shares.
func SharesToWeight(shares uint64) uint64 {
	if shares >= MaxShares {
		return 10000
	}
	if shares < MinShares {
		shares = MinShares
	}
	return 1 + (shares-2)*9999/262142
}

// PodConfig is the kubelet's ResourceConfigForPod with CPU limits
// enforced and the default 100 ms period: CPU shares from the
// pod's requests (containers, pod-level values and overhead, as
// podresources.PodRequests sums them) for Guaranteed and Burstable pods,
// 2 for BestEffort ones; a CFS quota from the pod's CPU limit and a memory
// limit for Guaranteed pods, and for Burstable ones when every container
// or the pod level limits that resource. On cgroup v2, a pod that sets
// pod-level resources and a memory limit also gets memory.high between
// its request and limit (the kubelet's MemoryQoS, on by default).
func PodConfig(pod *syncpodv1.Pod, v2 bool) Config {
	reqs := podresources.PodRequests(pod, podresources.Options{})
	lims := podresources.PodLimits(pod, podresources.Options{})
	cpuDeclared, memDeclared := podresources.LimitsDeclared(pod)
	shares := MilliCPUToShares(reqs.MilliCPU)
	quota := MilliCPUToQuota(lims.MilliCPU, QuotaPeriod)
	period := uint64(QuotaPeriod)
	mem := lims.Memory
	var c Config
	switch podresources.QOS(pod) {
	case podresources.Guaranteed:
		c = Config{CPUShares: &shares, CPUQuota: &quota, CPUPeriod: &period, Memory: &mem}
	case podresources.Burstable:
		c.CPUShares = &shares
		if cpuDeclared {
			c.CPUQuota, c.CPUPeriod = &quota, &period
		}
		if memDeclared {
			c.Memory = &mem
		}
	default:
		minShares := uint64(MinShares)
		c.CPUShares = &minShares
	}
	if v2 && podresources.PodLevelSet(pod) && memDeclared {
		if high := memoryHigh(reqs.Memory, lims.Memory); high != "" {
			c.Unified = map[string]string{"memory.high": high}
		}
	}
	return c
}

// memoryHigh is the kubelet's memory.high of a pod: request plus the
// throttling factor of the room up to the limit, rounded down to a page;
// none when request equals limit, without a limit, or not above the
// request.
func memoryHigh(req, lim int64) string {
	if lim == 0 || req == lim {
		return ""
	}
	high := int64(float64(req)+float64(lim-req)*MemoryThrottlingFactor) / PageSize * PageSize
	if high > 0 && high > req {
		return strconv.FormatInt(high, 10)
	}
	return ""
}

// QOSConfigs are the values of the node cgroup and the two QoS cgroups
// with pods running: the burstable cgroup's CPU shares cover the
// CPU requests of the Burstable pods, the besteffort cgroup gets the
// minimum 2; the node cgroup gets the node's CPU as shares, its memory as
// limit and its process IDs as pids limit (the kubelet's node
// allocatable, with nothing reserved). On
// cgroup v2 the burstable cgroup's and the node cgroup's memory
// protection is zeroed, as the kubelet does when no tiered memory
// reservation is asked for.
func QOSConfigs(pods []*syncpodv1.Pod, nodeMilliCPU, nodeMemory, nodePIDs int64, v2 bool) (node, burstable, bestEffort Config) {
	var burstableCPU int64
	for _, p := range pods {
		if podresources.QOS(p) == podresources.Burstable {
			burstableCPU += podresources.PodRequests(p, podresources.Options{}).MilliCPU
		}
	}
	bs := MilliCPUToShares(burstableCPU)
	be := uint64(MinShares)
	burstable.CPUShares, bestEffort.CPUShares = &bs, &be
	if nodeMilliCPU > 0 {
		ns := MilliCPUToShares(nodeMilliCPU)
		node.CPUShares = &ns
	}
	if nodeMemory > 0 {
		node.Memory = &nodeMemory
	}
	if nodePIDs > 0 {
		node.PidsLimit = &nodePIDs
	}
	if v2 {
		burstable.Unified = map[string]string{"memory.low": "0"}
		node.Unified = map[string]string{"memory.min": "0", "memory.low": "0"}
	}
	return node, burstable, bestEffort
}
