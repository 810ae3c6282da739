package service

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

type problems struct{ fields []FieldError }

func (p *problems) add(field, format string, args ...any) {
	p.fields = append(p.fields, FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (p *problems) err() error {
	if len(p.fields) == 0 {
		return nil
	}
	return &InvalidError{Fields: p.fields}
}

// ValidateApplyActions checks an ApplyActions request: pod with uid, name
// and spec; actions present; every container named in actions exists in
// the spec with the right kind; kills name a container id; starts without
// a new sandbox name the sandbox; resource quantities parse.
func ValidateApplyActions(req *executorv1.ApplyActionsRequest) error {
	var p problems
	pod := req.GetPod()
	if pod == nil {
		p.add("pod", "required")
	} else {
		if pod.GetUid() == "" {
			p.add("pod.uid", "required")
		}
		if pod.GetName() == "" {
			p.add("pod.name", "required")
		}
		if pod.GetSpec() == nil {
			p.add("pod.spec", "required")
		}
		if spec := pod.GetSpec(); spec != nil && spec.TerminationGracePeriodSeconds != nil && spec.GetTerminationGracePeriodSeconds() < 0 {
			p.add("pod.spec.termination_grace_period_seconds", "must be >= 0")
		}
		checkResources(&p, "pod.spec.init_containers", pod.GetSpec().GetInitContainers())
		checkResources(&p, "pod.spec.containers", pod.GetSpec().GetContainers())
	}
	if o := req.GetObserved(); o != nil && o.GetUid() != "" && pod != nil && o.GetUid() != pod.GetUid() {
		p.add("observed.uid", "%q is not the pod's uid %q", o.GetUid(), pod.GetUid())
	}
	a := req.GetActions()
	if a == nil {
		p.add("actions", "required")
		return p.err()
	}
	inits, regular := map[string]bool{}, map[string]bool{}
	for _, c := range pod.GetSpec().GetInitContainers() {
		inits[c.GetName()] = true
	}
	for _, c := range pod.GetSpec().GetContainers() {
		regular[c.GetName()] = true
	}
	for i, cs := range a.GetInitContainersToStart() {
		f := fmt.Sprintf("actions.init_containers_to_start[%d].name", i)
		switch {
		case cs.GetName() == "":
			p.add(f, "required")
		case !inits[cs.GetName()]:
			p.add(f, "%q is not an init container of the pod", cs.GetName())
		}
	}
	for i, cs := range a.GetContainersToStart() {
		f := fmt.Sprintf("actions.containers_to_start[%d].name", i)
		switch {
		case cs.GetName() == "":
			p.add(f, "required")
		case !regular[cs.GetName()]:
			p.add(f, "%q is not a container of the pod", cs.GetName())
		}
	}
	for i, k := range a.GetContainersToKill() {
		if k.GetContainerId() == "" {
			p.add(fmt.Sprintf("actions.containers_to_kill[%d].container_id", i), "required")
		}
		if f := fmt.Sprintf("actions.containers_to_kill[%d].name", i); k.GetName() == "" {
			p.add(f, "required")
		} else if !inits[k.GetName()] && !regular[k.GetName()] {
			p.add(f, "%q is not a container of the pod", k.GetName())
		}
	}
	starts := len(a.GetInitContainersToStart()) + len(a.GetContainersToStart())
	if starts > 0 && !a.GetCreateSandbox() && a.GetSandboxId() == "" {
		p.add("actions.sandbox_id", "required to start containers without create_sandbox")
	}
	return p.err()
}

func checkResources(p *problems, path string, cs []*syncpodv1.Container) {
	for i, c := range cs {
		r := c.GetResources()
		for _, q := range []struct{ field, v string }{
			{"requests.cpu", r.GetRequests().GetCpu()}, {"requests.memory", r.GetRequests().GetMemory()},
			{"limits.cpu", r.GetLimits().GetCpu()}, {"limits.memory", r.GetLimits().GetMemory()},
		} {
			field, v := q.field, q.v
			if v == "" {
				continue
			}
			if _, err := resource.ParseQuantity(v); err != nil {
				p.add(fmt.Sprintf("%s[%d].resources.%s", path, i, field), "%q is not a quantity", v)
			}
		}
	}
}

// ValidateRemoveResources checks that no id is empty.
func ValidateRemoveResources(req *executorv1.RemoveResourcesRequest) error {
	var p problems
	for i, id := range req.GetContainerIds() {
		if id == "" {
			p.add(fmt.Sprintf("container_ids[%d]", i), "must not be empty")
		}
	}
	for i, id := range req.GetSandboxIds() {
		if id == "" {
			p.add(fmt.Sprintf("sandbox_ids[%d]", i), "must not be empty")
		}
	}
	return p.err()
}

// ValidateResetBackoff checks that the pod uid is given.
func ValidateResetBackoff(req *executorv1.ResetBackoffRequest) error {
	var p problems
	if req.GetPodUid() == "" {
		p.add("pod_uid", "required")
	}
	return p.err()
}

// maxExecTimeout bounds ExecSync's timeout.
const maxExecTimeout = 10 * time.Minute

// ValidateExecSync checks the container id, the command and the timeout.
func ValidateExecSync(req *executorv1.ExecSyncRequest) error {
	var p problems
	if req.GetContainerId() == "" {
		p.add("container_id", "required")
	}
	if len(req.GetCommand()) == 0 || req.GetCommand()[0] == "" {
		p.add("command", "required: argv with a non-empty first element")
	}
	if t := req.GetTimeout(); t != nil {
		if err := t.CheckValid(); err != nil || t.AsDuration() < 0 || t.AsDuration() > maxExecTimeout {
			p.add("timeout", "must be between 0 and 10m")
		}
	}
	return p.err()
}
