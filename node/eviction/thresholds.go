package eviction

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Threshold is one eviction threshold: the signal is under pressure when
// its available amount is below Quantity bytes (or count), or below
// Percentage of its capacity when Quantity is 0.
type Threshold struct {
	Quantity   int64
	Percentage float64 // 0 < p < 1
}

// below says whether available is under the threshold for capacity; a
// zero threshold or an unmeasured capacity never is.
func (t Threshold) below(available, capacity int64) bool {
	if capacity <= 0 {
		return false
	}
	switch {
	case t.Quantity > 0:
		return available < t.Quantity
	case t.Percentage > 0:
		return float64(available) < t.Percentage*float64(capacity)
	}
	return false
}

// Thresholds are the hard eviction thresholds the pressure conditions
// use, one per signal.
type Thresholds struct {
	MemoryAvailable, NodeFsAvailable, NodeFsInodesFree Threshold
	ImageFsAvailable, ImageFsInodesFree, PIDAvailable  Threshold
}

// DefaultThresholds are the kubelet's default evictionHard on Linux
// (memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%,
// imagefs.available<15%, imagefs.inodesFree<5%) plus pid.available<5%:
// the kubelet sets no PID threshold by default (so it never reports
// PIDPressure unless one is configured); syncpod keeps a headroom of 5 %
// of kernel.pid_max.
func DefaultThresholds() Thresholds {
	return Thresholds{
		MemoryAvailable:   Threshold{Quantity: 100 << 20},
		NodeFsAvailable:   Threshold{Percentage: 0.10},
		NodeFsInodesFree:  Threshold{Percentage: 0.05},
		ImageFsAvailable:  Threshold{Percentage: 0.15},
		ImageFsInodesFree: Threshold{Percentage: 0.05},
		PIDAvailable:      Threshold{Percentage: 0.05},
	}
}

// ParseThresholds reads thresholds in the kubelet's --eviction-hard form,
// "memory.available<100Mi,nodefs.available<10%,...": the signals named
// replace those of base (the others keep base's); every problem at once.
func ParseThresholds(s string, base Thresholds) (Thresholds, error) {
	out := base
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	var errs []error
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		name, value, ok := strings.Cut(term, "<")
		if !ok {
			errs = append(errs, fmt.Errorf("%q: want signal<quantity or signal<percent%%", term))
			continue
		}
		var th Threshold
		if p, isPct := strings.CutSuffix(value, "%"); isPct {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || f <= 0 || f >= 100 {
				errs = append(errs, fmt.Errorf("%q: percentage must be in (0, 100)", term))
				continue
			}
			th.Percentage = f / 100
		} else {
			q, err := resource.ParseQuantity(value)
			if err != nil || q.Sign() <= 0 || q.CmpInt64(math.MaxInt64) > 0 {
				errs = append(errs, fmt.Errorf("%q: quantity must be positive and below 8Ei, such as 100Mi", term))
				continue
			}
			th.Quantity = q.Value()
		}
		switch name {
		case "memory.available":
			out.MemoryAvailable = th
		case "nodefs.available":
			out.NodeFsAvailable = th
		case "nodefs.inodesFree":
			out.NodeFsInodesFree = th
		case "imagefs.available":
			out.ImageFsAvailable = th
		case "imagefs.inodesFree":
			out.ImageFsInodesFree = th
		case "pid.available":
			out.PIDAvailable = th
		default:
			errs = append(errs, fmt.Errorf("%q: unknown signal %q (memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available)", term, name))
		}
	}
	return out, errors.Join(errs...)
}

// Pressure is which pressure conditions hold, with the signals that
// crossed their thresholds (for the conditions' messages).
type Pressure struct {
	Memory, Disk, PID bool
	// Why names the signals under pressure, e.g. "memory.available".
	Why []string
}

// PressureOf is the pure decision: the conditions signals s put the node
// in under thresholds th.
func PressureOf(s Signals, th Thresholds) Pressure {
	var p Pressure
	check := func(name string, t Threshold, available, capacity int64) bool {
		if t.below(available, capacity) {
			p.Why = append(p.Why, name)
			return true
		}
		return false
	}
	p.Memory = check("memory.available", th.MemoryAvailable, s.MemoryAvailableBytes, s.MemoryCapacityBytes)
	disk := check("nodefs.available", th.NodeFsAvailable, s.NodeFsAvailableBytes, s.NodeFsCapacityBytes)
	disk = check("nodefs.inodesFree", th.NodeFsInodesFree, s.NodeFsInodesFree, s.NodeFsInodes) || disk
	disk = check("imagefs.available", th.ImageFsAvailable, s.ImageFsAvailableBytes, s.ImageFsCapacityBytes) || disk
	disk = check("imagefs.inodesFree", th.ImageFsInodesFree, s.ImageFsInodesFree, s.ImageFsInodes) || disk
	p.Disk = disk
	p.PID = check("pid.available", th.PIDAvailable, s.PIDMax-s.Processes, s.PIDMax)
	return p
}
