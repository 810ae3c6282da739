package crisim

import (
	"fmt"
	"maps"
	"net/netip"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Seeding puts sandboxes and containers into the runtime as they are
// described, as though an earlier runtime had made them and this one had
// found them at start (restore.go does the same from the state
// directory): no CRI call, no event, no check of the transitions that led
// there. It is how tests (cri/critest) set up the runtime the code under
// test observes, or change it behind that code's back. Seeded objects are
// not written to a StateDir.

// SeedSandbox puts sandbox st (by st.Id) into the runtime, replacing one
// with the same id. Its metadata is reserved unless already reserved by
// another sandbox; its IP is st's (none when st has none).
func (r *Runtime) SeedSandbox(st *runtimeapi.PodSandboxStatus) error {
	if st.GetId() == "" {
		return required("id")
	}
	md := st.GetMetadata()
	nsOpts := st.GetLinux().GetNamespaces().GetOptions()
	sb := &sandbox{
		id:          st.GetId(),
		meta:        cloneSandboxMeta(md),
		labels:      maps.Clone(st.GetLabels()),
		annotations: maps.Clone(st.GetAnnotations()),
		hostNetwork: nsOpts.GetNetwork() == runtimeapi.NamespaceMode_NODE,
		nsOptions:   cloneNSOptions(nsOpts),
		handler:     st.GetRuntimeHandler(),
		reservedAs:  fmt.Sprintf("%s_%s_%s_%d", md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt()),
		state:       st.GetState(),
		createdAt:   st.GetCreatedAt(),
	}
	if s := st.GetNetwork().GetIp(); s != "" {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("%w: network.ip: %q is not an IP address", ErrInvalid, s)
		}
		sb.ip = ip
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.sandboxes[sb.id]; ok {
		r.metrics.sandboxes.WithLabelValues(sandboxStateName(old.state)).Dec()
		if r.sbNames[old.reservedAs] == old.id {
			delete(r.sbNames, old.reservedAs)
		}
		if old.ip.IsValid() {
			delete(r.ips, old.ip)
		}
	}
	r.sandboxes[sb.id] = sb
	if _, taken := r.sbNames[sb.reservedAs]; !taken {
		r.sbNames[sb.reservedAs] = sb.id
	}
	if sb.ip.IsValid() {
		r.ips[sb.ip] = true
	}
	r.metrics.sandboxes.WithLabelValues(sandboxStateName(sb.state)).Inc()
	return nil
}

// SeedContainer puts container st (by st.Id) of sandbox sandboxID into
// the runtime, replacing one with the same id. The sandbox must exist. A
// RUNNING container runs until stopped, or exits as its simulated-mode
// annotations say, counted from st.StartedAt; only a simulated runtime
// can hold one (in process mode there would be no process behind it). A
// replaced running container ends without an exit being recorded.
func (r *Runtime) SeedContainer(sandboxID string, st *runtimeapi.ContainerStatus) error {
	if st.GetId() == "" {
		return required("id")
	}
	running := st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING
	if running && r.opts.Mode != ModeSimulated {
		return fmt.Errorf("%w: only a simulated runtime can be seeded with a running container", ErrFailedPrecondition)
	}
	md := st.GetMetadata()
	c := &container{
		id:          st.GetId(),
		sandboxID:   sandboxID,
		meta:        &runtimeapi.ContainerMetadata{Name: md.GetName(), Attempt: md.GetAttempt()},
		image:       cloneImageSpec(st.GetImage()),
		imageRef:    st.GetImageRef(),
		labels:      maps.Clone(st.GetLabels()),
		annotations: maps.Clone(st.GetAnnotations()),
		logPath:     st.GetLogPath(),
		stopSignal:  st.GetStopSignal(),
		reservedAs:  fmt.Sprintf("%s_%s_%d", sandboxID, md.GetName(), md.GetAttempt()),
		state:       st.GetState(),
		createdAt:   st.GetCreatedAt(),
		startedAt:   st.GetStartedAt(),
		finishedAt:  st.GetFinishedAt(),
		exitCode:    st.GetExitCode(),
		reason:      st.GetReason(),
		message:     st.GetMessage(),
	}
	if sim, err := parseSimSpec(c.annotations); err == nil {
		c.sim = sim
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.sandboxes[sandboxID]; !ok {
		return fmt.Errorf("%w: sandbox %q", ErrNotFound, sandboxID)
	}
	if old, ok := r.containers[c.id]; ok {
		r.dropContainerLocked(old)
	}
	r.containers[c.id] = c
	if _, taken := r.ctrNames[c.reservedAs]; !taken {
		r.ctrNames[c.reservedAs] = c.id
	}
	r.metrics.containers.WithLabelValues(containerStateName(c.state)).Inc()
	if running {
		c.run = r.startSimulated(c, time.Duration(c.startedAt+c.sim.exitAfter.Nanoseconds()-r.nowNano()))
	}
	return nil
}

// Forget removes the container or sandbox id (a sandbox with its
// containers) without a CRI call or an event, as if it had vanished
// behind the runtime's back. An unknown id is ignored.
func (r *Runtime) Forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containers[id]; ok {
		r.dropContainerLocked(c)
	}
	sb, ok := r.sandboxes[id]
	if !ok {
		return
	}
	for _, c := range r.containers {
		if c.sandboxID == id {
			r.dropContainerLocked(c)
		}
	}
	delete(r.sandboxes, id)
	if r.sbNames[sb.reservedAs] == id {
		delete(r.sbNames, sb.reservedAs)
	}
	if sb.ip.IsValid() {
		delete(r.ips, sb.ip)
	}
	r.metrics.sandboxes.WithLabelValues(sandboxStateName(sb.state)).Dec()
}

// dropContainerLocked forgets c silently: a running simulated container
// ends with no exit recorded; mu must be held.
func (r *Runtime) dropContainerLocked(c *container) {
	delete(r.containers, c.id)
	if r.ctrNames[c.reservedAs] == c.id {
		delete(r.ctrNames, c.reservedAs)
	}
	r.metrics.containers.WithLabelValues(containerStateName(c.state)).Dec()
	if s, ok := c.run.(*simRunner); ok {
		s.stopTimer()
	}
	// No longer RUNNING: an exit already on its way records nothing.
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
}

func cloneImageSpec(s *runtimeapi.ImageSpec) *runtimeapi.ImageSpec {
	if s == nil {
		return &runtimeapi.ImageSpec{}
	}
	return proto.Clone(s).(*runtimeapi.ImageSpec)
}
