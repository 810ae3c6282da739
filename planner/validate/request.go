package validate

import (
	"fmt"

	"github.com/syncpod/syncpod/proto/fielderr"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Limits of the shared types (see proto/validation).
const (
	MaxContainers       = validation.MaxContainers
	MaxEnv              = validation.MaxEnv
	MaxArgs             = validation.MaxArgs
	MaxAnnotationsBytes = validation.MaxAnnotationsBytes
	MaxImageLen         = validation.MaxImageLen
)

// MaxProbes bounds the probe results of one Plan request: one entry per
// container instance, so more than one per container.
const MaxProbes = 16 * validation.MaxContainers

// MaxSelectorLen bounds a label selector's text.
const MaxSelectorLen = 4096

// Pod checks a desired pod and returns every problem (an Errors) or nil.
func Pod(p *syncpodv1.Pod) error { return validation.Pod(p) }

// Observed checks an observed pod (see validation.Observed). A nil observed
// pod is valid ("nothing exists yet").
func Observed(o *syncpodv1.ObservedPod) error { return validation.Observed(o) }

// Probes checks probe results against the pod: every entry names a
// container of the pod, results are known values, no (name, container_id)
// pair appears twice, and there are at most MaxProbes entries.
func Probes(pod *syncpodv1.Pod, probes []*syncpodv1.ContainerProbeResults) error {
	var l fielderr.List
	probeResults(&l, pod, probes)
	return l.Err()
}

func probeResults(l *fielderr.List, pod *syncpodv1.Pod, probes []*syncpodv1.ContainerProbeResults) {
	if len(probes) > MaxProbes {
		l.Add("", "%d entries exceed the limit of %d", len(probes), MaxProbes)
		return
	}
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
			l.Add(p, "required")
			continue
		}
		switch {
		case r.GetName() == "":
			l.Add(p+".name", "required")
		case !names[r.GetName()]:
			l.Add(p+".name", "names no container of the pod (%s)", fielderr.Quote(r.GetName()))
		}
		if len(r.GetContainerId()) > validation.MaxIDLen {
			l.Add(p+".container_id", "%d bytes exceed the limit of %d", len(r.GetContainerId()), validation.MaxIDLen)
		}
		key := [2]string{r.GetName(), r.GetContainerId()}
		if prev, dup := seen[key]; dup {
			l.Add(p, "duplicate entry for container %s id %s (also [%d])", fielderr.Quote(r.GetName()), fielderr.Quote(r.GetContainerId()), prev)
		} else {
			seen[key] = i
		}
		for _, f := range []struct {
			name string
			v    syncpodv1.ProbeResult
		}{{"liveness", r.GetLiveness()}, {"startup", r.GetStartup()}, {"readiness", r.GetReadiness()}} {
			if _, ok := syncpodv1.ProbeResult_name[int32(f.v)]; !ok {
				l.Add(p+"."+f.name, "unknown value %d", f.v)
			}
		}
	}
}

// Request checks the inputs of a Plan call: the pod (required; uid may be
// empty), the observed pod and the probe results, with paths prefixed by
// "pod.", "observed." and "probes". It also rejects an observed pod whose
// uid, name or namespace contradicts the pod's.
func Request(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, probes []*syncpodv1.ContainerProbeResults) error {
	var l fielderr.List
	if pod == nil {
		l.Add("pod", "required")
	} else {
		l.Append("pod", fielderr.As(validation.Pod(pod)))
	}
	l.Append("observed", fielderr.As(validation.Observed(observed)))
	var pr fielderr.List
	if pod != nil {
		probeResults(&pr, pod, probes)
	}
	l.Append("probes", pr.Errors())
	if observed != nil && pod != nil {
		if u := observed.GetUid(); u != "" && pod.GetUid() != "" && u != pod.GetUid() {
			l.Add("observed.uid", "is %s but pod.uid is %s", fielderr.Quote(u), fielderr.Quote(pod.GetUid()))
		}
		if n := observed.GetName(); n != "" && n != pod.GetName() {
			l.Add("observed.name", "is %s but pod.name is %s", fielderr.Quote(n), fielderr.Quote(pod.GetName()))
		}
		if ns, pns := observed.GetNamespace(), validation.NamespaceOrDefault(pod.GetNamespace()); ns != "" && validation.NamespaceOrDefault(ns) != pns {
			l.Add("observed.namespace", "is %s but pod.namespace is %s", fielderr.Quote(ns), fielderr.Quote(pns))
		}
	}
	return l.Err()
}

// Ref checks a reference to a stored pod: a name or a uid (at least one),
// a namespace (optional, "default" when empty). Paths are relative to the
// reference.
func Ref(ref *plannerv1.PodRef) error {
	var l fielderr.List
	if ref.GetName() == "" {
		if ref.GetUid() == "" {
			l.Add("name", "required (or uid)")
		}
	} else if msg := validation.NameProblem(ref.GetName()); msg != "" {
		l.Add("name", "%s", msg)
	}
	if ns := ref.GetNamespace(); ns != "" {
		if msg := validation.NamespaceProblem(ns); msg != "" {
			l.Add("namespace", "%s", msg)
		}
	}
	if u := ref.GetUid(); u != "" {
		if msg := validation.UIDProblem(u); msg != "" {
			l.Add("uid", "%s", msg)
		}
	}
	return l.Err()
}

// Filter checks a list or watch filter: the namespace (empty means all) is
// a DNS-1123 label and the label selector at most MaxSelectorLen bytes (its
// syntax is the store's to judge).
func Filter(namespace, selector string) error {
	var l fielderr.List
	if namespace != "" {
		if msg := validation.NamespaceProblem(namespace); msg != "" {
			l.Add("namespace", "%s", msg)
		}
	}
	if len(selector) > MaxSelectorLen {
		l.Add("label_selector", "%d bytes exceed the limit of %d", len(selector), MaxSelectorLen)
	}
	return l.Err()
}
