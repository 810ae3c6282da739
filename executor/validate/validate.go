package validate

import (
	"fmt"
	"time"

	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Bounds of the executor's own request fields; the pod and the observed
// pod are bounded by proto/validation, as in the planner.
const (
	// MaxRemove bounds each id list of RemoveResources.
	MaxRemove = 4096
	// maxExecTimeout bounds ExecSync's timeout.
	maxExecTimeout = 10 * time.Minute
)

// ApplyActions checks an ApplyActions request the way the planner
// checks a pod (proto/validation: a uid in RFC 4122 form — required here —,
// DNS-1123 name and namespace, unique container names, every string and
// list bounded, at most validation.MaxContainers containers), the observed
// pod likewise (validation.ObservedShape: it was read from a runtime, whose
// sandboxes can come and go between two list calls), and the actions
// against the pod: every container named exists with the right kind and is
// started at most once, kills name a container id, starts without a new
// sandbox name the sandbox, and every list and string of the actions is
// bounded. A change set that only kills may come with a pod that has no
// containers (housekeeping's orphans, whose uid and name are the
// runtime's): its identity is only bounded. Every problem is reported at
// once (a fielderr.Errors); nothing may be created for a request that
// fails it.
func ApplyActions(req *executorv1.ApplyActionsRequest) error {
	var l fielderr.List
	pod := req.GetPod()
	a := req.GetActions()
	switch {
	case pod == nil:
		l.Add("pod", "required")
	case killOnly(a) && len(pod.GetSpec().GetContainers())+len(pod.GetSpec().GetInitContainers()) == 0:
		// Housekeeping kills a pod the planner does not know (an orphan
		// found in the runtime): its identity is what the runtime says,
		// and nothing is created for it; only bound it.
		if pod.GetUid() == "" {
			l.Add("pod.uid", "required")
		}
		maxLen(&l, "pod.uid", pod.GetUid(), validation.MaxIDLen)
		if pod.GetName() == "" {
			l.Add("pod.name", "required")
		}
		maxLen(&l, "pod.name", pod.GetName(), validation.MaxNameLen)
		maxLen(&l, "pod.namespace", pod.GetNamespace(), validation.MaxNameLen)
		if pod.GetSpec() == nil {
			l.Add("pod.spec", "required")
		} else if g := pod.GetSpec().TerminationGracePeriodSeconds; g != nil && *g < 0 {
			l.Add("pod.spec.termination_grace_period_seconds", "must be >= 0")
		}
	default:
		if pod.GetUid() == "" {
			l.Add("pod.uid", "required")
		}
		l.Append("pod", fielderr.As(validation.Pod(pod)))
	}
	if o := req.GetObserved(); o != nil {
		l.Append("observed", fielderr.As(validation.ObservedShape(o)))
		if pod != nil && o.GetUid() != "" && o.GetUid() != pod.GetUid() {
			l.Add("observed.uid", "%s is not the pod's uid %s", fielderr.Quote(o.GetUid()), fielderr.Quote(pod.GetUid()))
		}
	}
	configObjects(&l, req.GetConfigMaps(), req.GetSecrets())
	if a == nil {
		l.Add("actions", "required")
		return l.Err()
	}
	var al fielderr.List
	actions(&al, pod.GetSpec(), a)
	l.Append("actions", al.Errors())
	return l.Err()
}

// killOnly reports whether a change set creates and starts nothing.
func killOnly(a *syncpodv1.PodActions) bool {
	return a != nil && !a.GetCreateSandbox() && len(a.GetInitContainersToStart()) == 0 && len(a.GetContainersToStart()) == 0 &&
		len(a.GetEphemeralContainersToStart()) == 0 && len(a.GetSidecarsToKeepRunning()) == 0
}

// actions checks a change set against the pod's spec; paths are relative
// to the actions.
func actions(l *fielderr.List, spec *syncpodv1.PodSpec, a *syncpodv1.PodActions) {
	inits, regular, ephemeral, sidecars := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range spec.GetEphemeralContainers() {
		ephemeral[c.GetName()] = true
	}
	for _, c := range spec.GetInitContainers() {
		inits[c.GetName()] = true
		sidecars[c.GetName()] = c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	}
	for _, c := range spec.GetContainers() {
		regular[c.GetName()] = true
	}
	maxLen(l, "sandbox_id", a.GetSandboxId(), validation.MaxIDLen)
	maxLen(l, "sandbox_config_hash", a.GetSandboxConfigHash(), validation.MaxSpecHashLen)
	maxLen(l, "message", a.GetMessage(), validation.MaxMessageLen)
	starts := func(field string, list []*syncpodv1.ContainerStart, names map[string]bool, kind string) {
		if len(list) > validation.MaxContainers {
			l.Add(field, "%d entries exceed the limit of %d", len(list), validation.MaxContainers)
			return
		}
		seen := map[string]int{}
		for i, cs := range list {
			p := fmt.Sprintf("%s[%d]", field, i)
			switch n := cs.GetName(); {
			case n == "":
				l.Add(p+".name", "required")
			case !names[n]:
				l.Add(p+".name", "%s is not %s of the pod", fielderr.Quote(n), kind)
			default:
				if prev, dup := seen[n]; dup {
					l.Add(p+".name", "%s is started twice (also %s[%d])", fielderr.Quote(n), field, prev)
				}
				seen[n] = i
			}
			maxLen(l, p+".spec_hash", cs.GetSpecHash(), validation.MaxSpecHashLen)
			maxLen(l, p+".message", cs.GetMessage(), validation.MaxMessageLen)
		}
	}
	starts("init_containers_to_start", a.GetInitContainersToStart(), inits, "an init container")
	starts("containers_to_start", a.GetContainersToStart(), regular, "a container")
	starts("ephemeral_containers_to_start", a.GetEphemeralContainersToStart(), ephemeral, "an ephemeral container")
	// only a pod kill keeps sidecars running until their turn.
	starts("sidecars_to_keep_running", a.GetSidecarsToKeepRunning(), sidecars, "a sidecar (an init container with restart policy Always)")
	if len(a.GetSidecarsToKeepRunning()) > 0 && !a.GetKillPod() {
		l.Add("sidecars_to_keep_running", "allowed only with kill_pod")
	}
	if kills := a.GetContainersToKill(); len(kills) > validation.MaxObservedContainers {
		l.Add("containers_to_kill", "%d entries exceed the limit of %d", len(kills), validation.MaxObservedContainers)
	} else {
		seen := map[string]int{}
		for i, k := range kills {
			p := fmt.Sprintf("containers_to_kill[%d]", i)
			onceID(l, seen, "containers_to_kill", "killed", i, k.GetContainerId())
			if k.GetName() == "" {
				l.Add(p+".name", "required")
			} else {
				inSpec := inits[k.GetName()] || regular[k.GetName()] || ephemeral[k.GetName()]
				removed := k.GetReason() == syncpodv1.KillReason_KILL_REASON_REMOVED_FROM_SPEC
				switch {
				case !inSpec && !removed:
					l.Add(p+".name", "%s is not a container of the pod", fielderr.Quote(k.GetName()))
				case inSpec && removed:
					l.Add(p+".reason", "%s is still a container of the pod", fielderr.Quote(k.GetName()))
				}
				maxLen(l, p+".name", k.GetName(), validation.MaxNameLen)
			}
			maxLen(l, p+".message", k.GetMessage(), validation.MaxMessageLen)
		}
	}
	resets(l, a, inits, regular)
	updates(l, a, inits, regular)
	if n := len(a.GetEphemeralContainersToStart()) + len(a.GetInitContainersToStart()) + len(a.GetContainersToStart()); n > 0 && !a.GetCreateSandbox() && a.GetSandboxId() == "" {
		l.Add("sandbox_id", "required to start containers without create_sandbox")
	}
}

// onceID checks entry i of list: its container_id is set, within bounds,
// and not in an earlier entry (seen maps ids to their entry; what says
// what the list does to them, for the message).
func onceID(l *fielderr.List, seen map[string]int, list, what string, i int, id string) {
	p := fmt.Sprintf("%s[%d].container_id", list, i)
	switch {
	case id == "":
		l.Add(p, "required")
	case len(id) > validation.MaxIDLen:
		l.Add(p, "%d bytes exceed the limit of %d", len(id), validation.MaxIDLen)
	default:
		if prev, dup := seen[id]; dup {
			l.Add(p, "%s is %s twice (also %s[%d])", fielderr.Quote(id), what, list, prev)
		}
		seen[id] = i
	}
}

// resets checks containers_to_reset: each entry an instance of an
// init or regular container of the pod, listed once, and never with a pod
// kill (the kill removes nothing, the reset keeps the sandbox).
func resets(l *fielderr.List, a *syncpodv1.PodActions, inits, regular map[string]bool) {
	list := a.GetContainersToReset()
	if len(list) == 0 {
		return
	}
	if a.GetKillPod() {
		l.Add("containers_to_reset", "not allowed with kill_pod: the reset keeps the sandbox")
	}
	if len(list) > validation.MaxObservedContainers {
		l.Add("containers_to_reset", "%d entries exceed the limit of %d", len(list), validation.MaxObservedContainers)
		return
	}
	seen := map[string]int{}
	for i, r := range list {
		p := fmt.Sprintf("containers_to_reset[%d]", i)
		onceID(l, seen, "containers_to_reset", "reset", i, r.GetContainerId())
		switch n := r.GetName(); {
		case n == "":
			l.Add(p+".name", "required")
		case !inits[n] && !regular[n]:
			l.Add(p+".name", "%s is not an init or regular container of the pod", fielderr.Quote(n))
		}
		maxLen(l, p+".name", r.GetName(), validation.MaxNameLen)
		maxLen(l, p+".message", r.GetMessage(), validation.MaxMessageLen)
	}
}

func maxLen(l *fielderr.List, path, s string, n int) {
	if len(s) > n {
		l.Add(path, "%d bytes exceed the limit of %d", len(s), n)
	}
}

// ids checks a list of runtime ids: at most MaxRemove, none empty or over
// validation.MaxIDLen.
func ids(l *fielderr.List, field string, list []string) {
	if len(list) > MaxRemove {
		l.Add(field, "%d entries exceed the limit of %d", len(list), MaxRemove)
		return
	}
	for i, id := range list {
		p := fmt.Sprintf("%s[%d]", field, i)
		if id == "" {
			l.Add(p, "must not be empty")
		}
		maxLen(l, p, id, validation.MaxIDLen)
	}
}

// RemoveResources checks both id lists.
func RemoveResources(req *executorv1.RemoveResourcesRequest) error {
	var l fielderr.List
	ids(&l, "container_ids", req.GetContainerIds())
	ids(&l, "sandbox_ids", req.GetSandboxIds())
	if f := req.GetForgetPod(); f != nil {
		// These make a path under the log root: only well-formed names.
		for _, c := range []struct{ field, problem string }{
			{"forget_pod.uid", validation.UIDProblem(f.GetUid())},
			{"forget_pod.namespace", validation.NamespaceProblem(f.GetNamespace())},
			{"forget_pod.name", validation.NameProblem(f.GetName())},
		} {
			if c.problem != "" {
				l.Add(c.field, "%s", c.problem)
			}
		}
	}
	return l.Err()
}

// ListBackoffs checks the optional pod uid filter.
func ListBackoffs(req *executorv1.ListBackoffsRequest) error {
	var l fielderr.List
	if u := req.GetPodUid(); u != "" {
		if msg := validation.UIDProblem(u); msg != "" {
			l.Add("pod_uid", "%s", msg)
		}
	}
	return l.Err()
}

// ResetBackoff checks the pod uid (required) and the optional
// container name.
func ResetBackoff(req *executorv1.ResetBackoffRequest) error {
	var l fielderr.List
	if u := req.GetPodUid(); u == "" {
		l.Add("pod_uid", "required")
	} else if msg := validation.UIDProblem(u); msg != "" {
		l.Add("pod_uid", "%s", msg)
	}
	if n := req.GetContainerName(); n != "" {
		if msg := validation.ContainerNameProblem(n); msg != "" {
			l.Add("container_name", "%s", msg)
		}
	}
	return l.Err()
}

// ExecSync checks the container id, the command (an argv within
// the kernel's bounds) and the timeout.
func ExecSync(req *executorv1.ExecSyncRequest) error {
	var l fielderr.List
	switch id := req.GetContainerId(); {
	case id == "":
		l.Add("container_id", "required")
	default:
		maxLen(&l, "container_id", id, validation.MaxIDLen)
	}
	cmd := req.GetCommand()
	switch {
	case len(cmd) == 0 || cmd[0] == "":
		l.Add("command", "required: argv with a non-empty first element")
	case len(cmd) > validation.MaxArgs:
		l.Add("command", "%d entries exceed the limit of %d", len(cmd), validation.MaxArgs)
	default:
		total := 0
		for i, a := range cmd {
			if len(a)+1 > validation.MaxArgLen {
				l.Add(fmt.Sprintf("command[%d]", i), "%d bytes exceed the kernel's limit of %d per argument (MAX_ARG_STRLEN)", len(a), validation.MaxArgLen-1)
			}
			total += len(a) + 1
		}
		if total > validation.MaxArgvBytes {
			l.Add("command", "%d bytes exceed the kernel's limit of %d (ARG_MAX)", total, validation.MaxArgvBytes)
		}
	}
	if t := req.GetTimeout(); t != nil {
		if err := t.CheckValid(); err != nil || t.AsDuration() < 0 || t.AsDuration() > maxExecTimeout {
			l.Add("timeout", "must be between 0 and 10m")
		}
	}
	return l.Err()
}

// updates checks containers_to_update: each entry an instance of
// an init or regular container of the pod, a "memory" or "cpu" stage,
// with the resources to apply, every memory stage before any cpu stage
// (the order the executor keeps), and never with a pod kill or a new
// sandbox (a resize is of containers kept running).
func updates(l *fielderr.List, a *syncpodv1.PodActions, inits, regular map[string]bool) {
	list := a.GetContainersToUpdate()
	if len(list) == 0 {
		return
	}
	if a.GetKillPod() || a.GetCreateSandbox() {
		l.Add("containers_to_update", "not allowed with kill_pod or create_sandbox: a resize is of running containers")
	}
	if len(list) > 2*validation.MaxContainers {
		l.Add("containers_to_update", "%d entries exceed the limit of %d", len(list), 2*validation.MaxContainers)
		return
	}
	seen := map[string]int{}
	cpuSeen := false
	for i, u := range list {
		p := fmt.Sprintf("containers_to_update[%d]", i)
		switch r := u.GetResource(); r {
		case "memory":
			if cpuSeen {
				l.Add(p+".resource", "every memory update comes before the cpu updates")
			}
		case "cpu":
			cpuSeen = true
		default:
			l.Add(p+".resource", "%s: want \"memory\" or \"cpu\"", fielderr.Quote(r))
		}
		onceID(l, seen, "containers_to_update", "updated for "+u.GetResource(), i, u.GetResource()+"/"+u.GetContainerId())
		if u.GetContainerId() == "" {
			l.Add(p+".container_id", "required")
		}
		switch n := u.GetName(); {
		case n == "":
			l.Add(p+".name", "required")
		case !inits[n] && !regular[n]:
			l.Add(p+".name", "%s is not an init or regular container of the pod", fielderr.Quote(n))
		}
		if u.GetResources() == nil {
			l.Add(p+".resources", "required")
		}
		maxLen(l, p+".message", u.GetMessage(), validation.MaxMessageLen)
	}
}
