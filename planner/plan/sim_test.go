package plan_test

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/proto/linuxres"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// sim is a tiny in-memory runtime that carries out PodActions the way the
// executor would (SyncPod steps 2-8, no failures, no back-off), so tests can
// re-plan after a plan is applied.
type sim struct {
	pod      *syncpodv1.Pod
	obs      *syncpodv1.ObservedPod
	probes   []*syncpodv1.ContainerProbeResults
	clock    int64
	sandboxN int
	ctrN     int
	// completeInits makes regular init containers exit 0 as soon as they start.
	completeInits bool
	// probesPass reports SUCCESS for every defined liveness/startup probe of
	// the newest instance of every container (see results).
	probesPass bool
	// logs is, per container name, one more than the highest restart count
	// started: the log directory a removed container leaves behind, from
	// which the next instance's restart count is taken.
	logs map[string]int32
}

func newSim(pod *syncpodv1.Pod) *sim {
	return &sim{pod: pod, obs: &syncpodv1.ObservedPod{Uid: pod.GetUid(), Name: pod.GetName(), Namespace: pod.GetNamespace()}}
}

func (s *sim) now() *timestamppb.Timestamp {
	s.clock++
	return &timestamppb.Timestamp{Seconds: 1_000_000 + s.clock}
}

// results are the probe results to plan with.
func (s *sim) results() []*syncpodv1.ContainerProbeResults {
	if !s.probesPass {
		return s.probes
	}
	var out []*syncpodv1.ContainerProbeResults
	all := append(append([]*syncpodv1.Container{}, s.pod.GetSpec().GetInitContainers()...), s.pod.GetSpec().GetContainers()...)
	for _, c := range all {
		r := &syncpodv1.ContainerProbeResults{Name: c.GetName()}
		if c.GetLivenessProbe() != nil {
			r.Liveness = syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
		}
		if c.GetStartupProbe() != nil {
			r.Startup = syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
		}
		out = append(out, r)
	}
	return out
}

func (s *sim) spec(name string) (c *syncpodv1.Container, init bool) {
	for _, c := range s.pod.GetSpec().GetInitContainers() {
		if c.GetName() == name {
			return c, true
		}
	}
	for _, c := range slices.Concat(s.pod.GetSpec().GetContainers(), s.pod.GetSpec().GetEphemeralContainers()) {
		if c.GetName() == name {
			return c, false
		}
	}
	return nil, false
}

// newest is the newest instance with that name, or nil.
func (s *sim) newest(name string) *syncpodv1.ObservedContainer {
	var best *syncpodv1.ObservedContainer
	for _, c := range s.obs.Containers {
		if c.GetName() == name && (best == nil || c.GetCreatedAt().GetSeconds() > best.GetCreatedAt().GetSeconds()) {
			best = c
		}
	}
	return best
}

func (s *sim) newestSandbox() *syncpodv1.ObservedSandbox {
	var best *syncpodv1.ObservedSandbox
	for _, b := range s.obs.Sandboxes {
		if best == nil || b.GetCreatedAt().GetSeconds() > best.GetCreatedAt().GetSeconds() {
			best = b
		}
	}
	return best
}

func (s *sim) exit(c *syncpodv1.ObservedContainer, code int32, reason string) {
	c.State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
	c.ExitCode = code
	c.Reason = reason
	c.FinishedAt = s.now()
}

// apply carries out a; the input is cloned so the caller's plan is untouched.
func (s *sim) apply(a *syncpodv1.PodActions) {
	a = proto.Clone(a).(*syncpodv1.PodActions)
	stoppable := func(c *syncpodv1.ObservedContainer) bool {
		return c.State != syncpodv1.ContainerState_CONTAINER_STATE_EXITED
	}
	if a.KillPod {
		for _, c := range s.obs.Containers {
			if c.State == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
				s.exit(c, 137, "Error")
			}
		}
		for _, b := range s.obs.Sandboxes {
			b.State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
		}
	} else {
		for _, k := range a.ContainersToKill {
			for _, c := range s.obs.Containers {
				if c.Id == k.ContainerId && stoppable(c) {
					s.exit(c, 137, "Error")
				}
			}
		}
	}
	// stop what has not exited, then remove every listed instance.
	for _, r := range a.ContainersToReset {
		kept := s.obs.Containers[:0]
		for _, c := range s.obs.Containers {
			if c.Id != r.ContainerId {
				kept = append(kept, c)
			}
		}
		s.obs.Containers = kept
	}
	sandboxID := a.SandboxId
	if a.CreateSandbox {
		s.sandboxN++
		b := &syncpodv1.ObservedSandbox{
			Id: fmt.Sprintf("s%d", s.sandboxN), State: syncpodv1.SandboxState_SANDBOX_STATE_READY, Attempt: a.Attempt,
			CreatedAt: s.now(), HostNetwork: s.pod.GetSpec().GetHostNetwork(), ConfigHash: a.GetSandboxConfigHash(),
		}
		if !b.HostNetwork {
			b.Ip = fmt.Sprintf("10.0.0.%d", s.sandboxN)
		}
		s.obs.Sandboxes = append(s.obs.Sandboxes, b)
		sandboxID = b.Id
	}
	for _, st := range slices.Concat(a.EphemeralContainersToStart, a.InitContainersToStart, a.ContainersToStart) {
		s.start(st, sandboxID)
	}
	// the runtime now reports the updated resources.
	for _, u := range a.ContainersToUpdate {
		for _, c := range s.obs.Containers {
			if c.Id == u.ContainerId && c.State == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
				v, _ := linuxres.FromProto(u.Resources)
				c.Resources = v.Proto()
			}
		}
	}
}

func (s *sim) start(st *syncpodv1.ContainerStart, sandboxID string) {
	restarts := s.logs[st.Name]
	if prev := s.newest(st.Name); prev != nil {
		restarts = prev.RestartCount + 1
	}
	if s.logs == nil {
		s.logs = map[string]int32{}
	}
	s.logs[st.Name] = max(s.logs[st.Name], restarts+1)
	s.ctrN++
	spec, isInit := s.spec(st.Name)
	c := &syncpodv1.ObservedContainer{
		Id: fmt.Sprintf("c%d", s.ctrN), Name: st.Name, State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING,
		SpecHash: st.SpecHash, RestartCount: restarts, CreatedAt: s.now(), SandboxId: sandboxID, Image: spec.GetImage(),
	}
	c.StartedAt = c.CreatedAt
	if spec.GetResources() != nil {
		// A runtime reports the resources it created the container with.
		v, _ := linuxres.Of(spec.GetResources())
		c.Resources = v.Proto()
		c.MemoryRequestBytes = proto.Int64(linuxres.MemoryRequestBytes(spec.GetResources()))
	}
	s.obs.Containers = append(s.obs.Containers, c)
	if s.completeInits && isInit && spec.GetRestartPolicy() != syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS {
		s.exit(c, 0, "Completed")
	}
}

// describe lists the observed state, one line per object, newest last.
func (s *sim) describe() string {
	var b strings.Builder
	for _, x := range s.obs.Sandboxes {
		fmt.Fprintf(&b, "sandbox %s attempt=%d %s ip=%q\n", x.Id, x.Attempt, short(x.State.String(), "SANDBOX_STATE_"), x.Ip)
	}
	for _, c := range s.obs.Containers {
		fmt.Fprintf(&b, "container %s %s %s", c.Id, c.Name, short(c.State.String(), "CONTAINER_STATE_"))
		if c.State == syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
			fmt.Fprintf(&b, " exit=%d", c.ExitCode)
		}
		fmt.Fprintf(&b, " restarts=%d sandbox=%s", c.RestartCount, c.SandboxId)
		if r := c.Resources; r != nil {
			fmt.Fprintf(&b, " shares=%d quota=%d memory=%d", r.CpuShares, r.CpuQuota, r.MemoryLimitBytes)
		}
		b.WriteString("\n")
	}
	for _, p := range s.probes {
		fmt.Fprintf(&b, "probes %s/%s liveness=%s startup=%s\n", p.Name, p.ContainerId,
			short(p.Liveness.String(), "PROBE_RESULT_"), short(p.Startup.String(), "PROBE_RESULT_"))
	}
	if b.Len() == 0 {
		return "empty"
	}
	return strings.TrimRight(b.String(), "\n")
}
