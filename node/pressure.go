package node

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signals are the host's eviction signals, as the kubelet names them:
// memory.available, nodefs.available and .inodesFree, imagefs.available
// and .inodesFree, pid.available. A zero capacity means "not measured"
// (never pressure).
type Signals struct {
	MemoryAvailableBytes, MemoryCapacityBytes   int64
	NodeFsAvailableBytes, NodeFsCapacityBytes   int64
	NodeFsInodesFree, NodeFsInodes              int64
	ImageFsAvailableBytes, ImageFsCapacityBytes int64
	ImageFsInodesFree, ImageFsInodes            int64
	// Processes is the number of processes and threads; PIDMax the
	// kernel's limit (kernel.pid_max).
	Processes, PIDMax int64
}

// HostReader reads the host's eviction signals. ReadSignals is the
// host's; tests pass a fake.
type HostReader interface {
	Signals() (Signals, error)
}

// HostReaderFunc adapts a function to HostReader.
type HostReaderFunc func() (Signals, error)

// Signals calls f.
func (f HostReaderFunc) Signals() (Signals, error) { return f() }

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
			if err != nil || q.Sign() <= 0 {
				errs = append(errs, fmt.Errorf("%q: quantity must be positive, such as 100Mi", term))
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

// pressureTracker holds a pressure condition for the kubelet's
// evictionPressureTransitionPeriod after its signal last crossed, so a
// signal oscillating around its threshold does not flap the condition.
type pressureTracker struct {
	period time.Duration
	mu     sync.Mutex
	// lastMemory, lastDisk and lastPID are when each condition was last
	// observed (zero: never).
	lastMemory, lastDisk, lastPID time.Time
	why                           []string
	// reported is what observe last returned.
	reported Pressure
}

// last is what observe last returned (no pressure before the first).
func (t *pressureTracker) last() Pressure {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reported
}

// admitUnderPressure is the kubelet's eviction admission: under memory
// pressure only pods that are not BestEffort are admitted; under disk or
// PID pressure none is. The message names the conditions.
func admitUnderPressure(pr Pressure, qos corev1.PodQOSClass) (bool, string) {
	var conds []string
	if pr.Memory {
		conds = append(conds, string(corev1.NodeMemoryPressure))
	}
	if pr.Disk {
		conds = append(conds, string(corev1.NodeDiskPressure))
	}
	if pr.PID {
		conds = append(conds, string(corev1.NodePIDPressure))
	}
	if len(conds) == 0 || (!pr.Disk && !pr.PID && qos != corev1.PodQOSBestEffort) {
		return true, ""
	}
	return false, fmt.Sprintf("The node had condition: [%s].", strings.Join(conds, ", "))
}

// observe records p at now and returns the conditions to report.
func (t *pressureTracker) observe(p Pressure, now time.Time) Pressure {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.Memory {
		t.lastMemory = now
	}
	if p.Disk {
		t.lastDisk = now
	}
	if p.PID {
		t.lastPID = now
	}
	if len(p.Why) > 0 {
		t.why = p.Why
	}
	held := func(last time.Time) bool { return !last.IsZero() && now.Sub(last) < t.period }
	out := Pressure{Memory: p.Memory || held(t.lastMemory), Disk: p.Disk || held(t.lastDisk), PID: p.PID || held(t.lastPID)}
	if out.Memory || out.Disk || out.PID {
		out.Why = t.why
	}
	t.reported = out
	return out
}

// ReadSignals is the host's HostReader: MemAvailable and MemTotal from
// /proc/meminfo (the kubelet uses the root cgroup's working set; the
// kernel's estimate is close to it and needs no cgroup), statfs of
// nodeFsDir and imageFsDir, the processes and threads of /proc/loadavg
// and kernel.pid_max.
func ReadSignals(nodeFsDir, imageFsDir string) HostReader {
	return HostReaderFunc(func() (Signals, error) {
		var s Signals
		var errs []error
		if f, err := os.Open("/proc/meminfo"); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) < 2 {
					continue
				}
				kb, err := strconv.ParseInt(fields[1], 10, 64)
				if err != nil {
					continue
				}
				switch fields[0] {
				case "MemTotal:":
					s.MemoryCapacityBytes = kb * 1024
				case "MemAvailable:":
					s.MemoryAvailableBytes = kb * 1024
				}
			}
			_ = f.Close()
		} else {
			errs = append(errs, err)
		}
		statfs := func(dir string) (avail, capacity, ifree, inodes int64, err error) {
			var fs unix.Statfs_t
			if err := unix.Statfs(dir, &fs); err != nil {
				return 0, 0, 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
			}
			return int64(fs.Bavail) * fs.Bsize, int64(fs.Blocks) * fs.Bsize, int64(fs.Ffree), int64(fs.Files), nil
		}
		var err error
		if s.NodeFsAvailableBytes, s.NodeFsCapacityBytes, s.NodeFsInodesFree, s.NodeFsInodes, err = statfs(nodeFsDir); err != nil {
			errs = append(errs, err)
		}
		if s.ImageFsAvailableBytes, s.ImageFsCapacityBytes, s.ImageFsInodesFree, s.ImageFsInodes, err = statfs(imageFsDir); err != nil {
			errs = append(errs, err)
		}
		if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
			s.PIDMax, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		} else {
			errs = append(errs, err)
		}
		// /proc/loadavg: "0.50 0.40 0.30 2/345 6789": 345 tasks.
		if b, err := os.ReadFile("/proc/loadavg"); err == nil {
			if f := strings.Fields(string(b)); len(f) >= 4 {
				if _, total, ok := strings.Cut(f[3], "/"); ok {
					s.Processes, _ = strconv.ParseInt(total, 10, 64)
				}
			}
		} else {
			errs = append(errs, err)
		}
		return s, errors.Join(errs...)
	})
}
