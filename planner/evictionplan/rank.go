package evictionplan

import (
	"cmp"
	"slices"
	"strings"
)

// Pod is a candidate for eviction: what ranking and the message need.
type Pod struct {
	UID, Namespace, Name string
	Priority             int32
	// Critical pods (static pods, system-critical priority) are never
	// evicted.
	Critical bool
	// Measured says whether the pod's usage was measured; an unmeasured
	// pod ranks first, as the kubelet ranks a pod without stats.
	Measured bool
	// MemoryBytes is the pod's memory working set; MemoryRequest its
	// memory request (containers' sums or pod-level).
	MemoryBytes, MemoryRequest int64
	// PodLevelMemoryRequest is spec.resources.requests.memory as written,
	// "" when the pod sets no pod-level request.
	PodLevelMemoryRequest string
	// DiskBytes and Inodes are its local storage use (rootfs, logs,
	// emptyDirs); DiskRequest its ephemeral-storage request.
	DiskBytes, Inodes, DiskRequest int64
	// Processes is its number of processes and threads.
	Processes int64
	// Containers are its regular and init containers' usage, in spec
	// order, for the message.
	Containers []Container
	// TerminationGracePeriodSeconds is the pod's own, nil when unset.
	TerminationGracePeriodSeconds *int64
}

// Container is one container's usage and request, for the message.
type Container struct {
	Name string
	// Measured says whether its memory was measured.
	Measured    bool
	MemoryBytes int64
	// MemoryRequest is its request as written, "" when none.
	MemoryRequest      string
	MemoryRequestBytes int64
}

// Rank orders pods for eviction under pressure on signal s, first to
// evict first, as the kubelet ranks them; pods is not changed.
//
//   - memory.available: usage above the request first, then lower
//     priority, then the larger usage above the request;
//   - disk signals: the same with the disk use (bytes, or inodes for
//     the inode signals) against the ephemeral-storage request;
//   - pid.available: lower priority first, then more processes.
//
// Unmeasured pods go first at every step that looks at usage; ties keep
// the input order.
func Rank(s Signal, pods []Pod) []Pod {
	out := slices.Clone(pods)
	var steps []func(a, b Pod) int
	switch s {
	case MemoryAvailable:
		use := func(p Pod) (int64, int64) { return p.MemoryBytes, p.MemoryRequest }
		steps = []func(a, b Pod) int{exceeds(use), byPriority, byUsage(use)}
	case NodeFsAvailable, ImageFsAvailable:
		use := func(p Pod) (int64, int64) { return p.DiskBytes, p.DiskRequest }
		steps = []func(a, b Pod) int{exceeds(use), byPriority, byUsage(use)}
	case NodeFsInodesFree, ImageFsInodesFree:
		// The kubelet compares inodes with the inode request (there is
		// none) to tell who exceeds, and subtracts the ephemeral-storage
		// request from the inodes to rank.
		steps = []func(a, b Pod) int{
			exceeds(func(p Pod) (int64, int64) { return p.Inodes, 0 }), byPriority,
			byUsage(func(p Pod) (int64, int64) { return p.Inodes, p.DiskRequest }),
		}
	case PIDAvailable:
		steps = []func(a, b Pod) int{byPriority, byUsage(func(p Pod) (int64, int64) { return p.Processes, 0 })}
	default:
		return out
	}
	slices.SortStableFunc(out, func(a, b Pod) int {
		for _, step := range steps {
			if c := step(a, b); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

func byPriority(a, b Pod) int { return cmp.Compare(a.Priority, b.Priority) }

// unmeasured puts an unmeasured pod first; 0 when both are measured.
func unmeasured(a, b Pod) (int, bool) {
	if a.Measured && b.Measured {
		return 0, false
	}
	return boolFirst(!a.Measured, !b.Measured), true
}

func exceeds(use func(Pod) (usage, request int64)) func(a, b Pod) int {
	return func(a, b Pod) int {
		if c, ok := unmeasured(a, b); ok {
			return c
		}
		ua, ra := use(a)
		ub, rb := use(b)
		return boolFirst(ua > ra, ub > rb)
	}
}

func byUsage(use func(Pod) (usage, request int64)) func(a, b Pod) int {
	return func(a, b Pod) int {
		if c, ok := unmeasured(a, b); ok {
			return c
		}
		ua, ra := use(a)
		ub, rb := use(b)
		return cmp.Compare(ub-rb, ua-ra)
	}
}

// Eviction is the pod a round evicts.
type Eviction struct {
	Pod Pod
	// Signal is the signal it is evicted for.
	Signal Signal
	// Message is the kubelet's status message and event message.
	Message string
	// GracePeriodSeconds is the kill's grace period: 1 s for a hard
	// threshold (the kubelet's immediate eviction), for a soft one the
	// pod's own bounded by --eviction-max-pod-grace-period.
	GracePeriodSeconds int64
}

// ImmediateGracePeriodSeconds is the grace period of an eviction for a
// hard threshold.
const ImmediateGracePeriodSeconds = 1

// Choose is the one pod to evict for the outcome o's threshold to reclaim,
// among pods (the active ones), or false when there is none: the first of
// the ranking that is not critical. maxPodGrace is
// --eviction-max-pod-grace-period in seconds.
func Choose(o Outcome, s Signals, pods []Pod, maxPodGrace int64) (Eviction, bool) {
	th, ok := o.Reclaim()
	if !ok {
		return Eviction{}, false
	}
	for _, p := range Rank(th.Signal, pods) {
		if p.Critical {
			continue
		}
		grace := int64(ImmediateGracePeriodSeconds)
		if !th.Hard() {
			grace = maxPodGrace
			if g := p.TerminationGracePeriodSeconds; g != nil && *g < grace {
				grace = *g
			}
		}
		return Eviction{Pod: p, Signal: th.Signal, Message: Message(th.Signal, p, o.Acting, s), GracePeriodSeconds: grace}, true
	}
	return Eviction{}, false
}

// Message is the kubelet's eviction message for pod p under pressure on
// signal sig (R-26.6): "The node was low on resource: memory. Threshold
// quantity: 100Mi, available: 51200Ki. " then, for memory, the pod's
// usage against its pod-level request if it sets one, and every
// container using more than it requests.
func Message(sig Signal, p Pod, acting []Threshold, s Signals) string {
	res := sig.Resource()
	var b strings.Builder
	b.WriteString("The node was low on resource: " + res + ". ")
	for _, t := range acting {
		if t.Signal.Resource() != res {
			continue
		}
		if o, ok := s.observe(t.Signal); ok {
			b.WriteString("Threshold quantity: " + t.Value.text(o.capacity) + ", available: " + available(t.Signal, o.available) + ". ")
		}
		break
	}
	if sig != MemoryAvailable || !p.Measured {
		return b.String()
	}
	if p.PodLevelMemoryRequest != "" {
		b.WriteString("Pod " + p.Name + " was using " + quantity(p.MemoryBytes) + ", request is " + p.PodLevelMemoryRequest + ", has larger consumption of memory. ")
	}
	for _, c := range p.Containers {
		if !c.Measured || c.MemoryBytes <= c.MemoryRequestBytes {
			continue
		}
		req := c.MemoryRequest
		if req == "" {
			req = "0"
		}
		b.WriteString("Container " + c.Name + " was using " + quantity(c.MemoryBytes) + ", request is " + req + ", has larger consumption of memory. ")
	}
	return b.String()
}

// available prints an observed amount as the kubelet does: bytes as a
// binary-SI quantity, counts (inodes, PIDs) as decimal ones.
func available(sig Signal, n int64) string {
	switch sig {
	case MemoryAvailable, NodeFsAvailable, ImageFsAvailable:
		return quantity(n)
	}
	return decimal(n)
}
