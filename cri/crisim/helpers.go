package crisim

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/syncpod/syncpod/proto/fielderr"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// validateSandboxConfig reports every problem of a sandbox config at once,
// as field errors (fielderr).
func validateSandboxConfig(cfg *runtimeapi.PodSandboxConfig) error {
	var l fielderr.List
	if cfg == nil {
		l.Add("config", "must be set")
		return l.Err()
	}
	md := cfg.GetMetadata()
	if md == nil {
		l.Add("config.metadata", "must be set")
	} else {
		if md.GetName() == "" {
			l.Add("config.metadata.name", "must not be empty")
		}
		if md.GetUid() == "" {
			l.Add("config.metadata.uid", "must not be empty")
		}
	}
	return l.Err()
}

// validateContainerConfig reports every problem of a container config at
// once, as field errors (fielderr).
func validateContainerConfig(sandboxID string, cfg *runtimeapi.ContainerConfig) error {
	var l fielderr.List
	if sandboxID == "" {
		l.Add("pod_sandbox_id", "must not be empty")
	}
	if cfg == nil {
		l.Add("config", "must be set")
	} else {
		if cfg.GetMetadata().GetName() == "" {
			l.Add("config.metadata.name", "must not be empty")
		}
		if cfg.GetImage().GetImage() == "" {
			l.Add("config.image.image", "must not be empty")
		}
		// A group is the group of a user: without one it means nothing
		// (runtimes refuse it, as critest checks).
		if sc := cfg.GetLinux().GetSecurityContext(); sc.GetRunAsGroup() != nil && sc.GetRunAsUser() == nil && sc.GetRunAsUsername() == "" {
			l.Add("config.linux.security_context.run_as_group", "needs run_as_user or run_as_username")
		}
		for i, m := range cfg.GetMounts() {
			if m.GetImage() != nil {
				l.Add(fmt.Sprintf("config.mounts[%d].image", i), "crisim cannot mount image volumes: its images are names with no content to mount; run the pod on containerd 2.1 or later")
			}
		}
	}
	return l.Err()
}

// required is the field error of a required field left empty.
func required(path string) error {
	return fielderr.Errors{{Path: path, Message: "must not be empty"}}
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

func cloneSandboxMeta(md *runtimeapi.PodSandboxMetadata) *runtimeapi.PodSandboxMetadata {
	return &runtimeapi.PodSandboxMetadata{Name: md.GetName(), Uid: md.GetUid(), Namespace: md.GetNamespace(), Attempt: md.GetAttempt()}
}

func cloneNSOptions(o *runtimeapi.NamespaceOption) *runtimeapi.NamespaceOption {
	if o == nil {
		return &runtimeapi.NamespaceOption{}
	}
	out := &runtimeapi.NamespaceOption{Network: o.GetNetwork(), Pid: o.GetPid(), Ipc: o.GetIpc(), TargetId: o.GetTargetId()}
	if u := o.GetUsernsOptions(); u != nil {
		out.UsernsOptions = proto.Clone(u).(*runtimeapi.UserNamespace)
	}
	return out
}

// sandboxStatusLocked builds a sandbox's CRI status; mu must be held.
func (r *Runtime) sandboxStatusLocked(sb *sandbox) *runtimeapi.PodSandboxStatus {
	net := &runtimeapi.PodSandboxNetworkStatus{}
	if sb.ip.IsValid() {
		net.Ip = sb.ip.String()
	}
	return &runtimeapi.PodSandboxStatus{
		Id:             sb.id,
		Metadata:       sb.meta,
		State:          sb.state,
		CreatedAt:      sb.createdAt,
		Network:        net,
		Linux:          &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: sb.nsOptions}},
		Labels:         sb.labels,
		Annotations:    sb.annotations,
		RuntimeHandler: sb.handler,
	}
}

// sandboxContainerStatusesLocked lists the statuses of a sandbox's
// containers, oldest first; mu must be held.
func (r *Runtime) sandboxContainerStatusesLocked(sandboxID string) []*runtimeapi.ContainerStatus {
	var out []*runtimeapi.ContainerStatus
	for _, c := range r.containers {
		if c.sandboxID == sandboxID {
			out = append(out, containerStatus(c))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].Id < out[j].Id
	})
	return out
}

// containerStatus builds a container's CRI status; mu must be held.
func containerStatus(c *container) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    c.meta,
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       c.image,
		ImageRef:    c.imageRef,
		ImageId:     c.imageRef,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      c.labels,
		Annotations: c.annotations,
		LogPath:     c.logPath,
		StopSignal:  effectiveStopSignal(c.stopSignal),
		Mounts:      statusMounts(c.pathMap),
		Resources:   containerResources(c.resources),
	}
}

// statusResources keeps the resource values a status reports (those
// containerd reports too): CPU shares, period and quota, memory limit.
func statusResources(l *runtimeapi.LinuxContainerResources) *runtimeapi.LinuxContainerResources {
	if l == nil {
		return nil
	}
	return &runtimeapi.LinuxContainerResources{CpuShares: l.GetCpuShares(), CpuPeriod: l.GetCpuPeriod(),
		CpuQuota: l.GetCpuQuota(), MemoryLimitInBytes: l.GetMemoryLimitInBytes()}
}

func containerResources(l *runtimeapi.LinuxContainerResources) *runtimeapi.ContainerResources {
	if l == nil {
		return nil
	}
	return &runtimeapi.ContainerResources{Linux: statusResources(l)}
}

func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// sandboxMatches applies a ListPodSandbox filter; an id matches by prefix,
// as containerd's does.
func sandboxMatches(sb *sandbox, f *runtimeapi.PodSandboxFilter) bool {
	if f == nil {
		return true
	}
	if f.GetId() != "" && !strings.HasPrefix(sb.id, f.GetId()) {
		return false
	}
	if f.GetState() != nil && f.GetState().GetState() != sb.state {
		return false
	}
	return labelsMatch(sb.labels, f.GetLabelSelector())
}

// containerMatches applies a ListContainers filter.
func containerMatches(c *container, f *runtimeapi.ContainerFilter) bool {
	if f == nil {
		return true
	}
	if f.GetId() != "" && !strings.HasPrefix(c.id, f.GetId()) {
		return false
	}
	if f.GetPodSandboxId() != "" && !strings.HasPrefix(c.sandboxID, f.GetPodSandboxId()) {
		return false
	}
	if f.GetState() != nil && f.GetState().GetState() != c.state {
		return false
	}
	return labelsMatch(c.labels, f.GetLabelSelector())
}

func containerStateName(s runtimeapi.ContainerState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "CONTAINER_"))
}

func sandboxStateName(s runtimeapi.PodSandboxState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "SANDBOX_"))
}

// publishLocked sends an event about id (a container or sandbox) in sb to
// every subscriber; mu must be held so events leave in the order the
// changes happened.
//
// The event carries the sandbox's status and the status of the container
// it is about only (none for a sandbox event or a removed container), so
// building it costs the same in a sandbox of 3,000 containers as in one
// of a single container; subscribers merge statuses by container id.
func (r *Runtime) publishLocked(id string, typ runtimeapi.ContainerEventType, sb *sandbox) {
	r.metrics.events.WithLabelValues(eventTypeName(typ)).Inc()
	if !r.events.hasSubscribers() {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ, CreatedAt: r.nowNano()}
	if sb != nil {
		ev.PodSandboxStatus = r.sandboxStatusLocked(sb)
	}
	if c, ok := r.containers[id]; ok {
		ev.ContainersStatuses = []*runtimeapi.ContainerStatus{containerStatus(c)}
	}
	r.events.publish(ev)
}

// eventTypeName is an event type's metric label: created, started,
// stopped or deleted.
func eventTypeName(typ runtimeapi.ContainerEventType) string {
	switch typ {
	case runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT:
		return "created"
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		return "started"
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		return "stopped"
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		return "deleted"
	}
	return strings.ToLower(typ.String())
}
