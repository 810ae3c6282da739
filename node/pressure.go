package node

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/syncpod/syncpod/node/eviction"
)

// Pressure is which pressure conditions hold (eviction.Pressure).
type Pressure = eviction.Pressure

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
