package podsync_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/allocation"
	"github.com/syncpod/syncpod/planner/events"
	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/plan/plantest"
	"github.com/syncpod/syncpod/planner/podsync"
	"github.com/syncpod/syncpod/planner/status"
	"github.com/syncpod/syncpod/planner/validate"
	"github.com/syncpod/syncpod/proto/linuxres"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

const podUID = "0b3c5d7e-1f2a-4b6c-8d0e-2f4a6b8c0d1e"

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is a scenario's state: the store's record (nil once dropped, or
// for an orphan) and a tiny runtime the executor answers change.
type world struct {
	rec      *plannerv1.PodRecord
	obs      *syncpodv1.ObservedPod
	now      time.Time
	ids      int
	restarts map[string]int32
	// killRestarts are the sidecars the next sync's kill restarts, with
	// the reason their start fails ("": it succeeds).
	killRestarts map[string]string
	// capacity and used stand for the node and its other pods.
	capacity allocation.Capacity
	used     *syncpodv1.Pod
}

// TestScenarios replays testdata/*.txt through Step, carrying the work out
// as the syncer does (apply, step again, commit, remove, drop).
func TestScenarios(t *testing.T) {
	plantest.Replay(t, "testdata/*.txt", func(t *testing.T) plantest.Command {
		w := &world{now: t0, restarts: map[string]int32{}, killRestarts: map[string]string{}, obs: &syncpodv1.ObservedPod{Uid: podUID}}
		return func(t *testing.T, d *datadriven.TestData) (string, error) {
			return w.run(d.Cmd, plantest.Words(d), d.Input)
		}
	})
}

// run runs one command:
//
//	pod (YAML input)               the desired pod (validated), stored
//	sync [fail=NAME:REASON] [retry-at=SECONDS] [seconds=N] [evicted=VOLUME:LIMIT] [pressure=GRACE] [shutdown=GRACE]
//	                               one sync, N seconds (default 10) after the
//	                               last; the executor's answer succeeds
//	                               except the listed starts (or "kill-pod")
//	exit NAME CODE                 the newest instance of NAME exits
//	delete                         the pod's deletion_time is set
//	                               kill-restarts=NAME[:REASON]: a sidecar the
//	                               kill keeps running is started again in it
//	drop-record                    the record disappears (an orphan is left)
//	observed                       the runtime's state
//	reason                         the stored status's reason, message and
//	                               conditions other than the four usual
func (w *world) run(cmd string, args []string, input string) (string, error) {
	switch cmd {
	case "pod":
		p, err := plantest.PodFromYAML(input)
		if err != nil {
			return "", err
		}
		p.Uid, p.Namespace, p.Generation = podUID, "default", 1
		if err := validate.Pod(p); err != nil {
			return "", err
		}
		w.rec = &plannerv1.PodRecord{Pod: p, Allocation: allocation.Initial(p)}
		w.obs.Name, w.obs.Namespace = p.GetName(), p.GetNamespace()
		return "ok", nil
	case "resize":
		// The pod applied again with other resources, as the store takes
		// it: a new generation, the allocation decided.
		p, err := plantest.PodFromYAML(input)
		if err != nil {
			return "", err
		}
		p.Uid, p.Namespace, p.Generation = podUID, "default", w.rec.GetPod().GetGeneration()+1
		if err := validate.Pod(p); err != nil {
			return "", err
		}
		var others []*syncpodv1.Pod
		if w.used != nil {
			others = append(others, w.used)
		}
		w.rec.Pod = p
		w.rec.Allocation = allocation.Decide(p, w.rec.GetAllocation(), others, w.capacity)
		if r := w.rec.Allocation.GetPendingReason(); r != "" {
			return "pending " + r + ": " + w.rec.Allocation.GetPendingMessage(), nil
		}
		return "admitted", nil
	case "capacity":
		// capacity MILLICPU BYTES [used=MILLICPU:BYTES]
		if len(args) < 2 {
			return "", fmt.Errorf("capacity MILLICPU BYTES [used=MILLICPU:BYTES]")
		}
		cpu, err1 := strconv.ParseInt(args[0], 10, 64)
		mem, err2 := strconv.ParseInt(args[1], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return "", err
		}
		w.capacity = allocation.Capacity{MilliCPU: cpu, MemoryBytes: mem}
		w.used = nil
		if len(args) > 2 {
			c, m, _ := strings.Cut(strings.TrimPrefix(args[2], "used="), ":")
			w.used = &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "other",
				Resources: &syncpodv1.ResourceRequirements{Requests: &syncpodv1.ResourceList{Cpu: c + "m", Memory: m}}}}}}
		}
		return "ok", nil
	case "sync":
		return w.sync(args)
	case "exit":
		if len(args) != 2 {
			return "", fmt.Errorf("exit NAME CODE")
		}
		code, err := strconv.Atoi(args[1])
		if err != nil {
			return "", err
		}
		c := w.newest(args[0])
		if c == nil {
			return "", fmt.Errorf("no container %q", args[0])
		}
		w.now = w.now.Add(time.Second)
		w.exit(c, int32(code))
		return w.describe(), nil
	case "delete":
		if w.rec == nil {
			return "", fmt.Errorf("no record")
		}
		w.rec.Pod.DeletionTime = timestamppb.New(w.now)
		return "ok", nil
	case "drop-record":
		w.rec = nil
		return "ok", nil
	case "observed":
		return w.describe(), nil
	case "reason":
		return w.reason(), nil
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

func (w *world) sync(args []string) (string, error) {
	fails := map[string]string{}
	var retryAt time.Time
	gap := 10 * time.Second
	evicted := ""
	var shutdown, pressure *int64
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "fail":
			name, reason, ok := strings.Cut(v, ":")
			if !ok {
				return "", fmt.Errorf("fail=NAME:REASON")
			}
			fails[name] = reason
		case "retry-at":
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", err
			}
			retryAt = t0.Add(time.Duration(n) * time.Second)
		case "seconds":
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", err
			}
			gap = time.Duration(n) * time.Second
		case "evicted":
			name, limit, ok := strings.Cut(v, ":")
			if !ok {
				return "", fmt.Errorf("evicted=VOLUME:LIMIT")
			}
			evicted = status.EmptyDirOverLimitMessage(name, limit)
		case "pressure":
			// An eviction under memory pressure, killed with GRACE.
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", err
			}
			pressure = &n
			evicted = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. " +
				"Container app was using 300Mi, request is 0, has larger consumption of memory. "
		case "kill-restarts":
			// A sidecar the kill keeps running exits during the kill and is
			// started again; NAME:REASON: its start fails;
			// NAME:liveness: its liveness probe failed and it was stopped.
			name, reason, _ := strings.Cut(v, ":")
			w.killRestarts[name] = reason
		case "shutdown":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", err
			}
			shutdown = &n
		default:
			return "", fmt.Errorf("unknown sync option %q", a)
		}
	}
	defer clear(w.killRestarts)
	w.now = w.now.Add(gap)
	var out []string
	in := podsync.Input{Record: w.rec, Observed: proto.Clone(w.obs).(*syncpodv1.ObservedPod), Now: w.now, Evicted: evicted, NodeShutdown: shutdown,
		PressureGracePeriod: pressure}
	before := proto.Clone(w.rec)
	work := podsync.Step(in)
	if again := podsync.Step(in); !sameWork(work, again) {
		return "", fmt.Errorf("Step is not deterministic")
	}
	if work.Apply != nil {
		out = append(out, "apply "+actions(work.Apply))
		resp := w.execute(work.Pod, work.Apply, fails, retryAt)
		out = append(out, "answer "+steps(resp))
		w.now = w.now.Add(time.Second)
		in.Applied, in.Now = &podsync.Applied{Actions: work.Apply, Result: resp}, w.now
		work = podsync.Step(in)
	}
	if w.rec != nil && !proto.Equal(before, w.rec) {
		return "", fmt.Errorf("Step modified its input record")
	}
	out = append(out, w.carry(work)...)
	if len(out) == 0 {
		out = append(out, "nothing to do")
	}
	return strings.Join(out, "\n"), nil
}

func sameWork(a, b podsync.Work) bool {
	return proto.Equal(a.Apply, b.Apply) && proto.Equal(a.Status, b.Status) && slices.EqualFunc(a.Events, b.Events, events.Same) &&
		slices.Equal(a.Remove.Containers, b.Remove.Containers) && slices.Equal(a.Remove.Sandboxes, b.Remove.Sandboxes) &&
		a.Drop == b.Drop && a.RefreshVolumes == b.RefreshVolumes && a.RemoveVolumes == b.RemoveVolumes && a.Wake.Equal(b.Wake) && fmt.Sprint(a.Err) == fmt.Sprint(b.Err)
}

// carry commits, removes and drops as the syncer does, and describes it.
func (w *world) carry(work podsync.Work) []string {
	var out []string
	if work.Commits() {
		if w.rec == nil {
			out = append(out, "BUG: commit without a record")
		} else {
			if work.Status != nil {
				w.rec.Status = work.Status
				out = append(out, "status "+statusLine(work.Status))
			}
			for _, e := range work.Events {
				c := e.GetInvolvedContainer()
				if c != "" {
					c = " " + c
				}
				out = append(out, fmt.Sprintf("event %s %s%s: %s", strings.TrimPrefix(e.GetType().String(), "EVENT_TYPE_"), e.GetReason(), c, e.GetMessage()))
			}
			if work.LastActions != nil {
				w.rec.LastActions = work.LastActions
			}
		}
	}
	if work.Err != nil {
		out = append(out, "error "+work.Err.Error())
		return out
	}
	if !work.Remove.Empty() {
		out = append(out, fmt.Sprintf("remove containers=%v sandboxes=%v", work.Remove.Containers, work.Remove.Sandboxes))
		w.obs.Containers = slices.DeleteFunc(w.obs.Containers, func(c *syncpodv1.ObservedContainer) bool {
			return slices.Contains(work.Remove.Containers, c.GetId())
		})
		w.obs.Sandboxes = slices.DeleteFunc(w.obs.Sandboxes, func(s *syncpodv1.ObservedSandbox) bool {
			return slices.Contains(work.Remove.Sandboxes, s.GetId())
		})
	}
	if work.Drop {
		out = append(out, "drop")
		w.rec = nil
	}
	if !work.Wake.IsZero() {
		out = append(out, fmt.Sprintf("wake at %ds", int(work.Wake.Sub(t0).Seconds())))
	}
	return out
}

// execute carries a change set out in the runtime, as the executor would.
func (w *world) execute(pod *syncpodv1.Pod, a *syncpodv1.PodActions, fails map[string]string, retryAt time.Time) *executorv1.ApplyActionsResponse {
	resp := &executorv1.ApplyActionsResponse{}
	if !retryAt.IsZero() {
		resp.RetryAt = timestamppb.New(retryAt)
	}
	ok := func(step executorv1.Step, target, id string) {
		resp.Steps = append(resp.Steps, &executorv1.StepResult{Step: step, Target: target, ContainerId: id, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED})
	}
	if a.GetKillPod() {
		if r, failed := fails["kill-pod"]; failed {
			resp.Steps = append(resp.Steps, &executorv1.StepResult{Step: executorv1.Step_STEP_KILL_POD, Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: r, Message: "the runtime did not answer"})
			return resp
		}
		// a sidecar kept running exits while the regular containers
		// stop and is started again, then stopped in its turn.
		for _, k := range a.GetSidecarsToKeepRunning() {
			reason, restarts := w.killRestarts[k.GetName()]
			if !restarts {
				continue
			}
			if c := w.newest(k.GetName()); c.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
				if reason == "liveness" {
					// Its liveness probe failed: the executor stopped it.
					w.exit(c, 137)
					resp.Steps = append(resp.Steps, &executorv1.StepResult{Step: executorv1.Step_STEP_KILL_CONTAINER, Target: k.GetName(),
						ContainerId: c.GetId(), Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED, Reason: "Unhealthy",
						Message: "Init container " + k.GetName() + " failed liveness probe, will be restarted"})
					reason = ""
				} else {
					w.exit(c, 1)
				}
			}
			if reason != "" {
				resp.Steps = append(resp.Steps, &executorv1.StepResult{Step: executorv1.Step_STEP_START_INIT_CONTAINER, Target: k.GetName(),
					Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: reason})
				continue
			}
			w.ids++
			c := &syncpodv1.ObservedContainer{Id: fmt.Sprintf("c%d", w.ids), Name: k.GetName(), State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING,
				SpecHash: k.GetSpecHash(), RestartCount: w.restarts[k.GetName()], SandboxId: w.newest(k.GetName()).GetSandboxId(),
				CreatedAt: timestamppb.New(w.now), StartedAt: timestamppb.New(w.now)}
			w.restarts[k.GetName()]++
			w.obs.Containers = append(w.obs.Containers, c)
			ok(executorv1.Step_STEP_START_INIT_CONTAINER, k.GetName(), c.Id)
		}
		for _, c := range w.obs.Containers {
			if c.State == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
				w.exit(c, 137)
			}
		}
		for _, s := range w.obs.Sandboxes {
			s.State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
		}
		ok(executorv1.Step_STEP_KILL_POD, "", "")
	}
	for _, k := range a.GetContainersToKill() {
		for _, c := range w.obs.Containers {
			if c.Id == k.GetContainerId() && c.State == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
				w.exit(c, 137)
			}
		}
		ok(executorv1.Step_STEP_KILL_CONTAINER, k.GetName(), k.GetContainerId())
	}
	for _, r := range a.GetContainersToReset() {
		if r.GetKill() {
			ok(executorv1.Step_STEP_KILL_CONTAINER, r.GetName(), r.GetContainerId())
		}
		w.obs.Containers = slices.DeleteFunc(w.obs.Containers, func(c *syncpodv1.ObservedContainer) bool { return c.Id == r.GetContainerId() })
		ok(executorv1.Step_STEP_REMOVE_CONTAINER, r.GetName(), r.GetContainerId())
	}
	if a.GetCreateSandbox() {
		w.ids++
		w.obs.Sandboxes = append(w.obs.Sandboxes, &syncpodv1.ObservedSandbox{Id: fmt.Sprintf("s%d", w.ids), State: syncpodv1.SandboxState_SANDBOX_STATE_READY,
			Attempt: a.GetAttempt(), HostNetwork: pod.GetSpec().GetHostNetwork(), Ip: "10.0.0.2", CreatedAt: timestamppb.New(w.now), ConfigHash: a.GetSandboxConfigHash()})
		ok(executorv1.Step_STEP_CREATE_SANDBOX, "", "")
	}
	start := func(step executorv1.Step, starts []*syncpodv1.ContainerStart) {
		for _, s := range starts {
			if r, failed := fails[s.GetName()]; failed {
				st := &executorv1.StepResult{Step: step, Target: s.GetName(), Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: r}
				if r == "CrashLoopBackOff" {
					st.Outcome, st.BackoffUntil = executorv1.Outcome_OUTCOME_SKIPPED, resp.GetRetryAt()
				}
				resp.Steps = append(resp.Steps, st)
				continue
			}
			w.ids++
			sbs, _ := plan.NewestFirst(w.obs)
			c := &syncpodv1.ObservedContainer{Id: fmt.Sprintf("c%d", w.ids), Name: s.GetName(), State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING,
				SpecHash: s.GetSpecHash(), RestartCount: w.restarts[s.GetName()], SandboxId: sbs[0].GetId(),
				CreatedAt: timestamppb.New(w.now), StartedAt: timestamppb.New(w.now)}
			if spec := containerSpec(pod, s.GetName()); spec.GetResources() != nil {
				// The runtime reports what the container was created with.
				v, _ := linuxres.Of(spec.GetResources())
				c.Resources = v.Proto()
				c.MemoryRequestBytes = proto.Int64(linuxres.MemoryRequestBytes(spec.GetResources()))
			}
			w.restarts[s.GetName()]++
			w.obs.Containers = append(w.obs.Containers, c)
			ok(step, s.GetName(), c.Id)
		}
	}
	for i, u := range a.GetContainersToUpdate() {
		if r, failed := fails["update"]; failed {
			resp.Steps = append(resp.Steps, &executorv1.StepResult{Step: executorv1.Step_STEP_UPDATE_CONTAINER_RESOURCES, Target: u.GetName(),
				ContainerId: u.GetContainerId(), Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: r,
				Message: "cannot decrease memory limits: attempting to set container \"" + u.GetName() + "\" memory limit (1) below current usage (2)"})
			for _, rest := range a.GetContainersToUpdate()[i+1:] {
				resp.Steps = append(resp.Steps, &executorv1.StepResult{Step: executorv1.Step_STEP_UPDATE_CONTAINER_RESOURCES, Target: rest.GetName(),
					ContainerId: rest.GetContainerId(), Outcome: executorv1.Outcome_OUTCOME_SKIPPED})
			}
			break
		}
		for _, c := range w.obs.Containers {
			if c.Id == u.GetContainerId() {
				v, _ := linuxres.FromProto(u.GetResources())
				c.Resources = v.Proto()
			}
		}
		ok(executorv1.Step_STEP_UPDATE_CONTAINER_RESOURCES, u.GetName(), u.GetContainerId())
	}
	start(executorv1.Step_STEP_START_EPHEMERAL_CONTAINER, a.GetEphemeralContainersToStart())
	start(executorv1.Step_STEP_START_INIT_CONTAINER, a.GetInitContainersToStart())
	start(executorv1.Step_STEP_START_CONTAINER, a.GetContainersToStart())
	return resp
}

func (w *world) exit(c *syncpodv1.ObservedContainer, code int32) {
	c.State, c.ExitCode, c.FinishedAt = syncpodv1.ContainerState_CONTAINER_STATE_EXITED, code, timestamppb.New(w.now)
	if code != 0 {
		c.Reason = "Error"
	}
}

func (w *world) newest(name string) *syncpodv1.ObservedContainer {
	_, cs := plan.NewestFirst(w.obs)
	for _, c := range cs {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

func (w *world) describe() string {
	var out []string
	if w.rec == nil {
		out = append(out, "record none")
	} else {
		out = append(out, "record "+statusLine(w.rec.GetStatus()))
	}
	for _, s := range w.obs.GetSandboxes() {
		out = append(out, fmt.Sprintf("sandbox %s %s", s.GetId(), strings.TrimPrefix(s.GetState().String(), "SANDBOX_STATE_")))
	}
	for _, c := range w.obs.GetContainers() {
		line := fmt.Sprintf("container %s %s %s", c.GetId(), c.GetName(), strings.TrimPrefix(c.GetState().String(), "CONTAINER_STATE_"))
		if c.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
			line += fmt.Sprintf(" exit=%d", c.GetExitCode())
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func actions(a *syncpodv1.PodActions) string {
	var parts []string
	if a.GetKillPod() {
		k := "kill_pod"
		if r := a.GetKillPodReason(); r != syncpodv1.KillPodReason_KILL_POD_REASON_UNSPECIFIED {
			k += "(" + strings.TrimPrefix(r.String(), "KILL_POD_REASON_") + ")"
		}
		if a.KillGracePeriodOverrideSeconds != nil {
			k += fmt.Sprintf(" grace_override=%ds", a.GetKillGracePeriodOverrideSeconds())
		}
		parts = append(parts, k)
	}
	if a.GetCreateSandbox() {
		parts = append(parts, fmt.Sprintf("create_sandbox attempt=%d", a.GetAttempt()))
	}
	names := func(ss []*syncpodv1.ContainerStart) string {
		var n []string
		for _, s := range ss {
			n = append(n, s.GetName())
		}
		return strings.Join(n, " ")
	}
	if len(a.GetSidecarsToKeepRunning()) > 0 {
		parts = append(parts, "keep_running=["+names(a.GetSidecarsToKeepRunning())+"]")
	}
	if len(a.GetEphemeralContainersToStart()) > 0 {
		parts = append(parts, "start_ephemeral=["+names(a.GetEphemeralContainersToStart())+"]")
	}
	if len(a.GetInitContainersToStart()) > 0 {
		parts = append(parts, "start_init=["+names(a.GetInitContainersToStart())+"]")
	}
	if len(a.GetContainersToStart()) > 0 {
		parts = append(parts, "start=["+names(a.GetContainersToStart())+"]")
	}
	for _, k := range a.GetContainersToKill() {
		parts = append(parts, "kill="+k.GetContainerId())
	}
	for _, r := range a.GetContainersToReset() {
		parts = append(parts, "reset="+r.GetContainerId())
	}
	for _, u := range a.GetContainersToUpdate() {
		parts = append(parts, "update="+u.GetContainerId()+":"+u.GetResource())
	}
	if m := a.GetMessage(); m != "" {
		parts = append(parts, strconv.Quote(m))
	}
	return strings.Join(parts, " ")
}

func steps(resp *executorv1.ApplyActionsResponse) string {
	var parts []string
	for _, s := range resp.GetSteps() {
		p := strings.ToLower(strings.TrimPrefix(s.GetStep().String(), "STEP_"))
		if s.GetTarget() != "" {
			p += ":" + s.GetTarget()
		}
		p += "=" + strings.ToLower(strings.TrimPrefix(s.GetOutcome().String(), "OUTCOME_"))
		if s.GetReason() != "" {
			p += "(" + s.GetReason() + ")"
		}
		parts = append(parts, p)
	}
	if t := resp.GetRetryAt(); t != nil {
		parts = append(parts, fmt.Sprintf("retry_at=%ds", int(t.AsTime().Sub(t0).Seconds())))
	}
	if len(parts) == 0 {
		return "(no steps)"
	}
	return strings.Join(parts, " ")
}

func statusLine(st *syncpodv1.PodStatus) string {
	if st == nil {
		return "no status"
	}
	parts := []string{strings.TrimPrefix(st.GetPhase().String(), "POD_PHASE_")}
	for _, cs := range slices.Concat(st.GetInitContainerStatuses(), st.GetContainerStatuses(), st.GetEphemeralContainerStatuses()) {
		s := cs.GetName() + ":"
		switch {
		case cs.GetState().GetRunning() != nil:
			s += "running"
		case cs.GetState().GetTerminated() != nil:
			s += fmt.Sprintf("terminated(%s,%d)", cs.GetState().GetTerminated().GetReason(), cs.GetState().GetTerminated().GetExitCode())
		case cs.GetState().GetWaiting() != nil:
			s += "waiting(" + cs.GetState().GetWaiting().GetReason() + ")"
		}
		if cs.GetRestartCount() > 0 {
			s += fmt.Sprintf(" restarts=%d", cs.GetRestartCount())
		}
		if r := cs.GetResources(); r.GetRequests() != nil || r.GetLimits() != nil {
			// what the container runs with, and what it was given.
			s += fmt.Sprintf(" resources=%s/%s:%s/%s allocated=%s/%s", r.GetRequests().GetCpu(), r.GetRequests().GetMemory(),
				r.GetLimits().GetCpu(), r.GetLimits().GetMemory(), cs.GetAllocatedResources().GetCpu(), cs.GetAllocatedResources().GetMemory())
		}
		parts = append(parts, s)
	}
	for _, c := range st.GetConditions() {
		if strings.HasPrefix(c.GetType(), "PodResize") {
			parts = append(parts, fmt.Sprintf("%s(%s)", c.GetType(), c.GetReason()))
			if m := c.GetMessage(); m != "" {
				parts[len(parts)-1] += " " + strconv.Quote(m)
			}
		}
	}
	return strings.Join(parts, " ")
}

// reason describes the stored status's reason and message, and the
// conditions beyond the four every pod has.
func (w *world) reason() string {
	st := w.rec.GetStatus()
	out := []string{fmt.Sprintf("reason=%q message=%q", st.GetReason(), st.GetMessage())}
	for _, c := range st.GetConditions() {
		switch c.GetType() {
		case status.ConditionReadyToStart, status.ConditionInitialized, status.ConditionContainersReady, status.ConditionReady:
			continue
		}
		out = append(out, fmt.Sprintf("condition %s=%s reason=%s message=%q", c.GetType(),
			strings.TrimPrefix(c.GetStatus().String(), "CONDITION_STATUS_"), c.GetReason(), c.GetMessage()))
	}
	return strings.Join(out, "\n")
}

func containerSpec(pod *syncpodv1.Pod, name string) *syncpodv1.Container {
	for _, c := range slices.Concat(pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers()) {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}
