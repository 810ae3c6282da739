package nodeshutdown

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The kubelet's words for a shutdown.
const (
	// Reason is the reason of a pod the shutdown ended.
	Reason = "Terminated"
	// Message is the message of a pod the shutdown ended.
	Message = "Pod was terminated in response to imminent node shutdown."
	// NotAdmittedReason is the reason of a pod refused during a shutdown.
	NotAdmittedReason = "NodeShutdown"
	// NotAdmittedMessage is the message of a pod refused during a shutdown.
	NotAdmittedMessage = "Pod was rejected as the node is shutting down."
	// NodeNotReadyMessage is the Ready condition's message (reason
	// KubeletNotReady, status False) while the node shuts down.
	NodeNotReadyMessage = "node is shutting down"
	// DisruptionTarget is the pod condition the kubelet sets on a pod it
	// terminates for a shutdown, with reason TerminationByKubelet.
	DisruptionTarget = "DisruptionTarget"
	// TerminationByKubelet is the DisruptionTarget condition's reason.
	TerminationByKubelet = "TerminationByKubelet"
)

// Priorities the kubelet's older two-period configuration maps to
//
const (
	// DefaultPriority is a pod's priority when it names none.
	DefaultPriority int32 = 0
	// SystemCriticalPriority is the priority of system-cluster-critical
	// and above.
	SystemCriticalPriority int32 = 2000000000
)

// Period is the grace the shutdown gives the pods of priority Priority and
// above, up to the next period's priority.
type Period struct {
	Priority           int32
	GracePeriodSeconds int64
}

// Config is a node's shutdown configuration, as the kubelet's
// shutdownGracePeriod, shutdownGracePeriodCriticalPods and
// shutdownGracePeriodByPodPriority.
type Config struct {
	GracePeriod         time.Duration
	CriticalGracePeriod time.Duration
	ByPriority          []Period
}

// Validate reports every problem of c, as the kubelet refuses its
// configuration: negative or sub-second periods, a critical period longer
// than the whole, both forms at once, a priority named twice.
func (c Config) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{"shutdown grace period", c.GracePeriod}, {"critical pods' shutdown grace period", c.CriticalGracePeriod}} {
		if p.d < 0 || p.d > 0 && p.d < time.Second {
			errs = append(errs, fmt.Errorf("%s %v must be either zero or otherwise >= 1s", p.name, p.d))
		}
	}
	if c.CriticalGracePeriod > c.GracePeriod {
		errs = append(errs, fmt.Errorf("critical pods' shutdown grace period %v must be <= the shutdown grace period %v",
			c.CriticalGracePeriod, c.GracePeriod))
	}
	if len(c.ByPriority) > 0 && (c.GracePeriod > 0 || c.CriticalGracePeriod > 0) {
		errs = append(errs, errors.New("set either the grace periods by pod priority or the shutdown grace period, not both"))
	}
	seen := map[int32]bool{}
	for _, p := range c.ByPriority {
		if p.GracePeriodSeconds < 0 {
			errs = append(errs, fmt.Errorf("priority %d: grace period %ds must not be negative", p.Priority, p.GracePeriodSeconds))
		}
		if seen[p.Priority] {
			errs = append(errs, fmt.Errorf("priority %d is given a grace period twice", p.Priority))
		}
		seen[p.Priority] = true
	}
	return errors.Join(errs...)
}

// Periods is c as the kubelet's shutdown manager uses it: the
// periods by priority, lowest priority first; without them, the two
// periods of the older form, regular pods (priority 0 and below
// system-critical) given the whole less the critical pods' part, and
// critical pods their part. None means graceful shutdown is off.
func (c Config) Periods() []Period {
	out := slices.Clone(c.ByPriority)
	if len(out) == 0 {
		if c.GracePeriod <= 0 || c.CriticalGracePeriod > c.GracePeriod {
			return nil
		}
		regular := c.GracePeriod - c.CriticalGracePeriod
		out = []Period{
			{Priority: DefaultPriority, GracePeriodSeconds: int64(regular / time.Second)},
			{Priority: SystemCriticalPriority, GracePeriodSeconds: int64(c.CriticalGracePeriod / time.Second)},
		}
	}
	slices.SortStableFunc(out, func(a, b Period) int { return cmpInt32(a.Priority, b.Priority) })
	return out
}

// Enabled reports whether c turns graceful shutdown on.
func (c Config) Enabled() bool { return len(c.Periods()) > 0 }

// Total is the time the whole shutdown may take: the sum of the periods
// (what the kubelet asks logind's InhibitDelayMaxSec to be at least).
func Total(periods []Period) time.Duration {
	var sum int64
	for _, p := range periods {
		sum += p.GracePeriodSeconds
	}
	return time.Duration(sum) * time.Second
}

func cmpInt32(a, b int32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Member is a pod of a group and the grace period it is killed with.
type Member struct {
	Pod                *syncpodv1.Pod
	GracePeriodSeconds int64
}

// Group is the pods one period covers; the shutdown kills them together
// and waits up to GracePeriodSeconds for them before the next group.
type Group struct {
	Period
	Members []Member
}

// Groups sorts pods into periods' groups, lowest priority first, as the
// kubelet's shutdown manager does: a pod goes to the period with
// the highest priority not above its own; a pod below every period to the
// lowest. Each is killed with its group's grace period, or its own
// terminationGracePeriodSeconds when that is shorter. periods must be
// sorted (Config.Periods); empty groups are kept (the shutdown skips
// them without waiting). Pods keep their order within a group.
func Groups(periods []Period, pods []*syncpodv1.Pod) []Group {
	groups := make([]Group, len(periods))
	for i, p := range periods {
		groups[i].Period = p
	}
	if len(groups) == 0 {
		return groups
	}
	for _, pod := range pods {
		prio := PriorityOf(pod)
		i, found := slices.BinarySearchFunc(groups, prio, func(g Group, p int32) int { return cmpInt32(g.Priority, p) })
		switch {
		case found:
		case i == 0:
			// Below every period: the lowest.
		default:
			i-- // the highest period below the pod's priority
		}
		g := &groups[i]
		grace := g.GracePeriodSeconds
		if own := pod.GetSpec().TerminationGracePeriodSeconds; own != nil && *own <= grace {
			grace = *own
		}
		g.Members = append(g.Members, Member{Pod: pod, GracePeriodSeconds: grace})
	}
	return groups
}

// PriorityOf is a pod's priority: spec.priority, 0 when unset.
func PriorityOf(pod *syncpodv1.Pod) int32 {
	return pod.GetSpec().GetPriority()
}

// ParsePeriods parses the flag form of grace periods by pod priority:
// comma-separated PRIORITY=DURATION pairs, e.g.
// "0=20s,100000=10s,2000000000=5s"; durations are whole seconds.
func ParsePeriods(s string) ([]Period, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []Period
	var errs []error
	for item := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%q: want PRIORITY=DURATION, e.g. 0=20s", item))
			continue
		}
		prio, err := strconv.ParseInt(strings.TrimSpace(k), 10, 32)
		if err != nil {
			errs = append(errs, fmt.Errorf("%q: the priority is not a 32-bit integer", item))
			continue
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 || d%time.Second != 0 {
			errs = append(errs, fmt.Errorf("%q: the grace period must be a whole number of seconds, e.g. 20s", item))
			continue
		}
		out = append(out, Period{Priority: int32(prio), GracePeriodSeconds: int64(d / time.Second)})
	}
	return out, errors.Join(errs...)
}
