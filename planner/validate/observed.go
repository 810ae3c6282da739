package validate

import (
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Observed checks an observed pod for malformed state: every sandbox and
// container has a unique, non-empty id; containers have names; states are
// set (not UNSPECIFIED) and known; a non-empty container sandbox_id names a
// listed sandbox; timestamps are valid. A nil observed pod is valid
// ("nothing exists yet").
func Observed(o *syncpodv1.ObservedPod) error {
	var l list
	l.observed(o)
	return l.errs.Err()
}

func (l *list) timestamp(path string, t *timestamppb.Timestamp) {
	if t != nil && t.CheckValid() != nil {
		l.add(path, "invalid timestamp")
	}
}

func (l *list) observed(o *syncpodv1.ObservedPod) {
	if o == nil {
		return
	}
	l.timestamp("observed_at", o.GetObservedAt())
	ids := map[string]string{}
	unique := func(path, id string) {
		if id == "" {
			l.add(path, "required")
			return
		}
		if prev, dup := ids[id]; dup {
			l.add(path, "duplicate id %q (also %s)", id, prev)
			return
		}
		ids[id] = path
	}
	sandboxes := map[string]bool{}
	for i, s := range o.GetSandboxes() {
		p := fmt.Sprintf("sandboxes[%d]", i)
		if s == nil {
			l.add(p, "required")
			continue
		}
		unique(p+".id", s.GetId())
		sandboxes[s.GetId()] = true
		switch s.GetState() {
		case syncpodv1.SandboxState_SANDBOX_STATE_READY, syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY:
		default:
			l.add(p+".state", "must be SANDBOX_STATE_READY or SANDBOX_STATE_NOTREADY")
		}
		l.timestamp(p+".created_at", s.GetCreatedAt())
	}
	for i, c := range o.GetContainers() {
		p := fmt.Sprintf("containers[%d]", i)
		if c == nil {
			l.add(p, "required")
			continue
		}
		unique(p+".id", c.GetId())
		if c.GetName() == "" {
			l.add(p+".name", "required")
		}
		switch c.GetState() {
		case syncpodv1.ContainerState_CONTAINER_STATE_CREATED, syncpodv1.ContainerState_CONTAINER_STATE_RUNNING,
			syncpodv1.ContainerState_CONTAINER_STATE_EXITED, syncpodv1.ContainerState_CONTAINER_STATE_UNKNOWN:
		default:
			l.add(p+".state", "must be CREATED, RUNNING, EXITED or UNKNOWN")
		}
		if sid := c.GetSandboxId(); sid != "" && !sandboxes[sid] {
			l.add(p+".sandbox_id", "names no listed sandbox (%q)", sid)
		}
		l.timestamp(p+".created_at", c.GetCreatedAt())
		l.timestamp(p+".started_at", c.GetStartedAt())
		l.timestamp(p+".finished_at", c.GetFinishedAt())
	}
}

// Probes checks probe results against the pod: every entry names a
// container of the pod, results are known values, and no (name,
// container_id) pair appears twice.
func Probes(pod *syncpodv1.Pod, probes []*syncpodv1.ContainerProbeResults) error {
	var l list
	l.probes(pod, probes)
	return l.errs.Err()
}

func (l *list) probes(pod *syncpodv1.Pod, probes []*syncpodv1.ContainerProbeResults) {
	names := map[string]bool{}
	for _, c := range pod.GetSpec().GetInitContainers() {
		names[c.GetName()] = true
	}
	for _, c := range pod.GetSpec().GetContainers() {
		names[c.GetName()] = true
	}
	seen := map[[2]string]int{}
	for i, r := range probes {
		p := fmt.Sprintf("[%d]", i)
		if r == nil {
			l.add(p, "required")
			continue
		}
		switch {
		case r.GetName() == "":
			l.add(p+".name", "required")
		case !names[r.GetName()]:
			l.add(p+".name", "names no container of the pod (%q)", r.GetName())
		}
		key := [2]string{r.GetName(), r.GetContainerId()}
		if prev, dup := seen[key]; dup {
			l.add(p, "duplicate entry for container %q id %q (also [%d])", r.GetName(), r.GetContainerId(), prev)
		} else {
			seen[key] = i
		}
		for _, f := range []struct {
			name string
			v    syncpodv1.ProbeResult
		}{{"liveness", r.GetLiveness()}, {"startup", r.GetStartup()}, {"readiness", r.GetReadiness()}} {
			if _, ok := syncpodv1.ProbeResult_name[int32(f.v)]; !ok {
				l.add(p+"."+f.name, "unknown value %d", f.v)
			}
		}
	}
}

// Request checks the inputs of a Plan call: the pod (required; uid may be
// empty), the observed pod and the probe results, with paths prefixed by
// "pod.", "observed." and "probes". It also rejects an observed pod whose
// uid, name or namespace contradicts the pod's.
func Request(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, probes []*syncpodv1.ContainerProbeResults) error {
	var all Errors
	var l list
	if pod == nil {
		l.add("pod", "required")
	} else {
		var pl list
		pl.pod(pod)
		all = append(all, pl.errs.Prefix("pod")...)
	}
	var ol list
	ol.observed(observed)
	all = append(all, ol.errs.Prefix("observed")...)
	if observed != nil && pod != nil {
		if u := observed.GetUid(); u != "" && pod.GetUid() != "" && u != pod.GetUid() {
			l.add("observed.uid", "is %q but pod.uid is %q", u, pod.GetUid())
		}
		if n := observed.GetName(); n != "" && n != pod.GetName() {
			l.add("observed.name", "is %q but pod.name is %q", n, pod.GetName())
		}
		if ns, pns := observed.GetNamespace(), defaultNS(pod.GetNamespace()); ns != "" && defaultNS(ns) != pns {
			l.add("observed.namespace", "is %q but pod.namespace is %q", ns, pns)
		}
	}
	var pr list
	if pod != nil {
		pr.probes(pod, probes)
	}
	all = append(all, pr.errs.Prefix("probes")...)
	all = append(all, l.errs...)
	return all.Err()
}

func defaultNS(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
