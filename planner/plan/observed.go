package plan

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// view is the read-only, sorted view of Compute's inputs.
type view struct {
	spec       *syncpodv1.PodSpec
	deleted    bool
	sandboxes  []*syncpodv1.ObservedSandbox   // newest first
	containers []*syncpodv1.ObservedContainer // newest first
	activeID   string                         // newest sandbox's id, "" if none
	probes     []*syncpodv1.ContainerProbeResults
	// sandboxHash is SandboxHash of the desired pod.
	sandboxHash string
	// updates are the in-place resizes found.
	updates resizes
}

func newView(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, probes []*syncpodv1.ContainerProbeResults) view {
	v := view{
		spec:       pod.GetSpec(),
		deleted:    pod.GetDeletionTime() != nil,
		sandboxes:  sortedNewestFirst(observed.GetSandboxes(), compareSandboxes),
		containers: sortedNewestFirst(observed.GetContainers(), compareContainers),
		probes:     probes,
	}
	v.sandboxHash = SandboxHash(pod)
	if len(v.sandboxes) > 0 {
		v.activeID = v.sandboxes[0].GetId()
	}
	return v
}

// NewestFirst returns the pod's sandboxes and containers in the one order
// every decision about them uses (docs/design.md): newest created first, ties
// broken by id, an unset time oldest. The inputs are never reordered.
// Status, probes and housekeeping use it too, so that they describe the
// same instances plan.Compute acted on.
func NewestFirst(o *syncpodv1.ObservedPod) ([]*syncpodv1.ObservedSandbox, []*syncpodv1.ObservedContainer) {
	return sortedNewestFirst(o.GetSandboxes(), compareSandboxes), sortedNewestFirst(o.GetContainers(), compareContainers)
}

// sortedNewestFirst returns in itself when it is already sorted (it is only
// read), otherwise a sorted copy: the caller's slice is never reordered.
func sortedNewestFirst[T any](in []T, cmp func(a, b T) int) []T {
	if slices.IsSortedFunc(in, cmp) {
		return in
	}
	out := slices.Clone(in)
	slices.SortStableFunc(out, cmp)
	return out
}

// compareTime orders newest first; nil is the oldest.
func compareTime(a, b *timestamppb.Timestamp) int {
	as, bs := a.GetSeconds(), b.GetSeconds()
	if as != bs {
		if as > bs {
			return -1
		}
		return 1
	}
	an, bn := a.GetNanos(), b.GetNanos()
	if an != bn {
		if an > bn {
			return -1
		}
		return 1
	}
	// A set timestamp at the epoch is still newer than none.
	switch {
	case a != nil && b == nil:
		return -1
	case a == nil && b != nil:
		return 1
	}
	return 0
}

func compareSandboxes(a, b *syncpodv1.ObservedSandbox) int {
	if c := compareTime(a.GetCreatedAt(), b.GetCreatedAt()); c != 0 {
		return c
	}
	return strings.Compare(a.GetId(), b.GetId())
}

func compareContainers(a, b *syncpodv1.ObservedContainer) int {
	if c := compareTime(a.GetCreatedAt(), b.GetCreatedAt()); c != 0 {
		return c
	}
	return strings.Compare(a.GetId(), b.GetId())
}

// newest is the kubelet's FindContainerStatusByName: the newest status with
// that name, from any sandbox.
func (v *view) newest(name string) *syncpodv1.ObservedContainer {
	for _, c := range v.containers {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// newestActive is the newest status with that name among the active
// statuses: those of the newest sandbox.
func (v *view) newestActive(name string) *syncpodv1.ObservedContainer {
	if v.activeID == "" {
		return nil
	}
	for _, c := range v.containers {
		if c.GetName() == name && c.GetSandboxId() == v.activeID {
			return c
		}
	}
	return nil
}

// probeResults returns the probe results that apply to instance c, or nil:
// the entry with c's id, else the first entry for c's name with an empty
// container_id (Compute only examines the newest relevant instance of a
// name, see the package doc).
func (v *view) probeResults(c *syncpodv1.ObservedContainer) *syncpodv1.ContainerProbeResults {
	var byName *syncpodv1.ContainerProbeResults
	for _, p := range v.probes {
		if p.GetName() != c.GetName() {
			continue
		}
		switch p.GetContainerId() {
		case c.GetId():
			return p
		case "":
			if byName == nil {
				byName = p
			}
		}
	}
	return byName
}

// liveness is the liveness result for instance c of spec container sc;
// unspecified when the spec has no liveness probe.
func (v *view) liveness(sc *syncpodv1.Container, c *syncpodv1.ObservedContainer) syncpodv1.ProbeResult {
	if sc.GetLivenessProbe() == nil {
		return syncpodv1.ProbeResult_PROBE_RESULT_UNSPECIFIED
	}
	return v.probeResults(c).GetLiveness()
}

// startup is the startup result for instance c of spec container sc;
// unspecified when the spec has no startup probe.
func (v *view) startup(sc *syncpodv1.Container, c *syncpodv1.ObservedContainer) syncpodv1.ProbeResult {
	if sc.GetStartupProbe() == nil {
		return syncpodv1.ProbeResult_PROBE_RESULT_UNSPECIFIED
	}
	return v.probeResults(c).GetStartup()
}
