// Package linuxres turns a container's Kubernetes CPU and memory
// quantities into the Linux values the CRI carries (CPU shares, CFS quota
// and period, memory limit), as the kubelet computes them, and back into
// quantities for a status. The executor creates and resizes containers
// with these values and the planner compares them with what the runtime
// reports (rule ), so both use this one package. It does no I/O.
package linuxres

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The kubelet's constants (pkg/kubelet/cm: MinShares, QuotaPeriod,
// MinQuotaPeriod).
const (
	// CPUPeriod is the CFS period in microseconds.
	CPUPeriod = 100000
	// MinShares is the smallest CPU shares value a container gets.
	MinShares = 2
	// MinQuota is the smallest CFS quota in microseconds.
	MinQuota = 1000
	// sharesPerCPU: one CPU is 1024 shares.
	sharesPerCPU = 1024
	milliPerCPU  = 1000
)

// Values are a container's Linux resources. A zero CPUQuota or
// MemoryLimitBytes means no limit.
type Values struct {
	CPUShares        int64
	CPUQuota         int64
	CPUPeriod        int64
	MemoryLimitBytes int64
}

// Of converts r: CPU shares from the CPU request (the limit when there is
// no request; MinShares when neither), CFS quota from the CPU limit over
// CPUPeriod (at least MinQuota), memory limit in bytes. A quantity that
// does not parse is an error naming its field.
func Of(r *syncpodv1.ResourceRequirements) (Values, error) {
	out := Values{CPUShares: MinShares}
	reqCPU, err := parse("resources.requests.cpu", r.GetRequests().GetCpu())
	if err != nil {
		return out, err
	}
	limCPU, err := parse("resources.limits.cpu", r.GetLimits().GetCpu())
	if err != nil {
		return out, err
	}
	limMem, err := parse("resources.limits.memory", r.GetLimits().GetMemory())
	if err != nil {
		return out, err
	}
	if _, err := parse("resources.requests.memory", r.GetRequests().GetMemory()); err != nil {
		return out, err
	}
	shareFrom := reqCPU
	if shareFrom == nil {
		shareFrom = limCPU
	}
	if shareFrom != nil {
		out.CPUShares = max(shareFrom.MilliValue()*sharesPerCPU/milliPerCPU, MinShares)
	}
	if limCPU != nil {
		out.CPUPeriod = CPUPeriod
		out.CPUQuota = max(limCPU.MilliValue()*CPUPeriod/milliPerCPU, MinQuota)
	}
	if limMem != nil {
		out.MemoryLimitBytes = limMem.Value()
	}
	return out, nil
}

// FromProto reads the runtime's report; ok is false when there is none.
// A negative quota (cgroup v1's "no limit") is 0.
func FromProto(l *syncpodv1.LinuxResources) (v Values, ok bool) {
	if l == nil {
		return Values{}, false
	}
	return Values{CPUShares: l.GetCpuShares(), CPUQuota: max(l.GetCpuQuota(), 0),
		CPUPeriod: l.GetCpuPeriod(), MemoryLimitBytes: max(l.GetMemoryLimitBytes(), 0)}, true
}

// Proto is v as the wire message.
func (v Values) Proto() *syncpodv1.LinuxResources {
	return &syncpodv1.LinuxResources{CpuShares: v.CPUShares, CpuQuota: v.CPUQuota,
		CpuPeriod: v.CPUPeriod, MemoryLimitBytes: v.MemoryLimitBytes}
}

// SameCPURequest reports whether v and o give the same CPU shares.
func (v Values) SameCPURequest(o Values) bool { return v.CPUShares == o.CPUShares }

// SameCPULimit reports whether v and o give the same CFS quota (no
// limit being equal to no limit whatever the period).
func (v Values) SameCPULimit(o Values) bool {
	if v.CPUQuota == 0 || o.CPUQuota == 0 {
		return v.CPUQuota == o.CPUQuota
	}
	return v.CPUQuota*o.period() == o.CPUQuota*v.period()
}

// SameMemoryLimit reports whether v and o give the same memory limit.
func (v Values) SameMemoryLimit(o Values) bool { return v.MemoryLimitBytes == o.MemoryLimitBytes }

func (v Values) period() int64 {
	if v.CPUPeriod <= 0 {
		return CPUPeriod
	}
	return v.CPUPeriod
}

// Requirements turns runtime values back into requests and limits, for a
// status while a resize is under way: the CPU request from the shares
// (none when they are MinShares and want has none), the CPU limit from
// quota and period, the memory limit; the memory request, which sets
// nothing in the runtime, is want's.
func (v Values) Requirements(want *syncpodv1.ResourceRequirements) *syncpodv1.ResourceRequirements {
	out := &syncpodv1.ResourceRequirements{}
	req := &syncpodv1.ResourceList{Memory: want.GetRequests().GetMemory()}
	if v.CPUShares > MinShares || want.GetRequests().GetCpu() != "" {
		req.Cpu = resource.NewMilliQuantity(v.CPUShares*milliPerCPU/sharesPerCPU, resource.DecimalSI).String()
	}
	lim := &syncpodv1.ResourceList{}
	if v.CPUQuota > 0 {
		lim.Cpu = resource.NewMilliQuantity(v.CPUQuota*milliPerCPU/v.period(), resource.DecimalSI).String()
	}
	if v.MemoryLimitBytes > 0 {
		lim.Memory = resource.NewQuantity(v.MemoryLimitBytes, resource.BinarySI).String()
	}
	if req.GetCpu() != "" || req.GetMemory() != "" {
		out.Requests = req
	}
	if lim.GetCpu() != "" || lim.GetMemory() != "" {
		out.Limits = lim
	}
	return out
}

func parse(field, s string) (*resource.Quantity, error) {
	if s == "" {
		return nil, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %q: %w", field, s, err)
	}
	return &q, nil
}

// MemoryRequestBytes is r's memory request in bytes, 0 when unset or not
// a quantity (validation refuses those).
func MemoryRequestBytes(r *syncpodv1.ResourceRequirements) int64 {
	q, err := parse("resources.requests.memory", r.GetRequests().GetMemory())
	if err != nil || q == nil {
		return 0
	}
	return q.Value()
}
