package validation

import (
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Observed checks an observed pod for malformed state: every sandbox and
// container has a unique, non-empty id; containers have names; states are
// set (not UNSPECIFIED) and known; a non-empty container sandbox_id names a
// listed sandbox; timestamps are valid; counters are not negative; every
// string and list is within its bound. A nil observed pod is valid
// ("nothing exists yet"). Paths are relative to the observed pod
// ("containers[0].id").
func Observed(o *syncpodv1.ObservedPod) error {
	var l list
	l.observed(o, true)
	return l.Err()
}

// ObservedShape is Observed without the check that a container's
// sandbox_id names a listed sandbox: for a status taken from a runtime,
// where a sandbox can appear or go between the two list calls that built
// it, so the reference proves nothing about the caller.
func ObservedShape(o *syncpodv1.ObservedPod) error {
	var l list
	l.observed(o, false)
	return l.Err()
}

func (l *list) timestamp(path string, t *timestamppb.Timestamp) {
	if t != nil && t.CheckValid() != nil {
		l.Add(path, "invalid timestamp")
	}
}

// maxLen records a problem when s is longer than n bytes.
func (l *list) maxLen(path, s string, n int) bool {
	if len(s) > n {
		l.Add(path, "%d bytes exceed the limit of %d", len(s), n)
		return false
	}
	return true
}

func (l *list) observed(o *syncpodv1.ObservedPod, references bool) {
	if o == nil {
		return
	}
	l.maxLen("uid", o.GetUid(), MaxIDLen)
	l.maxLen("name", o.GetName(), MaxNameLen)
	l.maxLen("namespace", o.GetNamespace(), MaxNameLen)
	l.timestamp("observed_at", o.GetObservedAt())
	if n := len(o.GetSandboxes()); n > MaxObservedSandboxes {
		l.Add("sandboxes", "%d entries exceed the limit of %d", n, MaxObservedSandboxes)
		return
	}
	if n := len(o.GetContainers()); n > MaxObservedContainers {
		l.Add("containers", "%d entries exceed the limit of %d", n, MaxObservedContainers)
		return
	}
	ids := map[string]string{}
	unique := func(path, id string) {
		if id == "" {
			l.Add(path, "required")
			return
		}
		if !l.maxLen(path, id, MaxIDLen) {
			return
		}
		if prev, dup := ids[id]; dup {
			l.Add(path, "duplicate id %s (also %s)", fielderr.Quote(id), prev)
			return
		}
		ids[id] = path
	}
	sandboxes := map[string]bool{}
	for i, s := range o.GetSandboxes() {
		p := fmt.Sprintf("sandboxes[%d]", i)
		if s == nil {
			l.Add(p, "required")
			continue
		}
		unique(p+".id", s.GetId())
		sandboxes[s.GetId()] = true
		switch s.GetState() {
		case syncpodv1.SandboxState_SANDBOX_STATE_READY, syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY:
		default:
			l.Add(p+".state", "must be SANDBOX_STATE_READY or SANDBOX_STATE_NOTREADY")
		}
		l.maxLen(p+".ip", s.GetIp(), MaxIPLen)
		l.maxLen(p+".config_hash", s.GetConfigHash(), MaxSpecHashLen)
		l.timestamp(p+".created_at", s.GetCreatedAt())
	}
	for i, c := range o.GetContainers() {
		p := fmt.Sprintf("containers[%d]", i)
		if c == nil {
			l.Add(p, "required")
			continue
		}
		unique(p+".id", c.GetId())
		if c.GetName() == "" {
			l.Add(p+".name", "required")
		} else {
			l.maxLen(p+".name", c.GetName(), MaxNameLen)
		}
		switch c.GetState() {
		case syncpodv1.ContainerState_CONTAINER_STATE_CREATED, syncpodv1.ContainerState_CONTAINER_STATE_RUNNING,
			syncpodv1.ContainerState_CONTAINER_STATE_EXITED, syncpodv1.ContainerState_CONTAINER_STATE_UNKNOWN:
		default:
			l.Add(p+".state", "must be CREATED, RUNNING, EXITED or UNKNOWN")
		}
		if c.GetRestartCount() < 0 {
			l.Add(p+".restart_count", "must be >= 0")
		}
		if sid := c.GetSandboxId(); sid != "" && l.maxLen(p+".sandbox_id", sid, MaxIDLen) && references && !sandboxes[sid] {
			l.Add(p+".sandbox_id", "names no listed sandbox (%s)", fielderr.Quote(sid))
		}
		l.maxLen(p+".reason", c.GetReason(), MaxReasonLen)
		l.maxLen(p+".message", c.GetMessage(), MaxMessageLen)
		l.maxLen(p+".spec_hash", c.GetSpecHash(), MaxSpecHashLen)
		l.maxLen(p+".image", c.GetImage(), MaxImageLen)
		l.timestamp(p+".created_at", c.GetCreatedAt())
		l.timestamp(p+".started_at", c.GetStartedAt())
		l.timestamp(p+".finished_at", c.GetFinishedAt())
	}
}
