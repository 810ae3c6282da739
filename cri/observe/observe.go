package observe

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/syncpod/syncpod/cri/crilabels"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Listing is one relist's view of one pod: the listed sandboxes and
// containers whose PodUID label is the pod's uid.
type Listing struct {
	// UID is the pod's uid.
	UID string
	// Sandboxes are the pod's listed sandboxes.
	Sandboxes []*runtimeapi.PodSandbox
	// Containers are the pod's listed containers.
	Containers []*runtimeapi.Container
}

// Group groups list results by pod uid (the PodUID label; a container
// without it takes its sandbox's). Objects with no uid at all are skipped.
func Group(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) map[string]*Listing {
	// A relist at 1,000 pods groups every second, so this allocates a
	// fixed handful of times whatever the count: one pass finds each
	// object's uid and counts per pod, then every pod's slices are cut
	// (capped) from one backing array per kind, the listings from one
	// slab, and a second pass fills them.
	out := make(map[string]*Listing, len(sandboxes))
	slab := make([]Listing, 0, len(sandboxes))
	get := func(uid string) *Listing {
		l := out[uid]
		if l == nil {
			if len(slab) < cap(slab) {
				slab = append(slab, Listing{UID: uid})
				l = &slab[len(slab)-1]
			} else {
				l = &Listing{UID: uid}
			}
			out[uid] = l
		}
		return l
	}
	sbOf := make([]*Listing, len(sandboxes))
	sandboxUID := make(map[string]string, len(sandboxes))
	counts := make(map[*Listing][2]int, len(sandboxes))
	for i, s := range sandboxes {
		uid := s.GetLabels()[crilabels.PodUID]
		if uid == "" {
			uid = s.GetMetadata().GetUid()
		}
		if uid == "" {
			continue
		}
		sandboxUID[s.GetId()] = uid
		l := get(uid)
		sbOf[i] = l
		n := counts[l]
		n[0]++
		counts[l] = n
	}
	cOf := make([]*Listing, len(containers))
	for i, c := range containers {
		uid := c.GetLabels()[crilabels.PodUID]
		if uid == "" {
			uid = sandboxUID[c.GetPodSandboxId()]
		}
		if uid == "" {
			continue
		}
		l := get(uid)
		cOf[i] = l
		n := counts[l]
		n[1]++
		counts[l] = n
	}
	sbBack := make([]*runtimeapi.PodSandbox, len(sandboxes))
	cBack := make([]*runtimeapi.Container, len(containers))
	var so, co int
	for l, n := range counts {
		// Capped: an append by a caller reallocates, never writes into
		// the next pod's part.
		l.Sandboxes, l.Containers = sbBack[so:so:so+n[0]], cBack[co:co:co+n[1]]
		so, co = so+n[0], co+n[1]
	}
	for i, l := range sbOf {
		if l != nil {
			l.Sandboxes = append(l.Sandboxes, sandboxes[i])
		}
	}
	for i, l := range cOf {
		if l != nil {
			l.Containers = append(l.Containers, containers[i])
		}
	}
	return out
}

// Running counts the listing's ready sandboxes and running containers.
func (l *Listing) Running() (sandboxes, containers int) {
	for _, s := range l.Sandboxes {
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			sandboxes++
		}
	}
	for _, c := range l.Containers {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			containers++
		}
	}
	return sandboxes, containers
}

// nanos turns CRI nanoseconds since the epoch into a timestamp; 0 is unset.
func nanos(n int64) *timestamppb.Timestamp {
	if n <= 0 {
		return nil
	}
	return timestamppb.New(time.Unix(0, n))
}

// Sandbox converts a sandbox status.
func Sandbox(s *runtimeapi.PodSandboxStatus) *syncpodv1.ObservedSandbox {
	st := syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
	if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
		st = syncpodv1.SandboxState_SANDBOX_STATE_READY
	}
	return &syncpodv1.ObservedSandbox{
		Id:          s.GetId(),
		State:       st,
		Attempt:     s.GetMetadata().GetAttempt(),
		CreatedAt:   nanos(s.GetCreatedAt()),
		Ip:          s.GetNetwork().GetIp(),
		HostNetwork: s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
		ConfigHash:  s.GetLabels()[crilabels.SandboxConfigHash],
	}
}

// Container converts a container status; sandboxID is the sandbox it
// belongs to (a container status does not carry it).
func Container(c *runtimeapi.ContainerStatus, sandboxID string) *syncpodv1.ObservedContainer {
	name := c.GetLabels()[crilabels.ContainerName]
	if name == "" {
		name = c.GetMetadata().GetName()
	}
	var st syncpodv1.ContainerState
	switch c.GetState() {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		st = syncpodv1.ContainerState_CONTAINER_STATE_CREATED
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		st = syncpodv1.ContainerState_CONTAINER_STATE_RUNNING
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		st = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
	default:
		st = syncpodv1.ContainerState_CONTAINER_STATE_UNKNOWN
	}
	restarts, _ := strconv.ParseInt(c.GetAnnotations()[crilabels.RestartCount], 10, 32)
	image := c.GetImage().GetImage()
	if image == "" {
		image = c.GetImageRef()
	}
	return &syncpodv1.ObservedContainer{
		Id:           c.GetId(),
		Name:         name,
		State:        st,
		ExitCode:     c.GetExitCode(),
		Reason:       c.GetReason(),
		Message:      c.GetMessage(),
		SpecHash:     c.GetLabels()[crilabels.SpecHash],
		RestartCount: int32(restarts),
		CreatedAt:    nanos(c.GetCreatedAt()),
		StartedAt:    nanos(c.GetStartedAt()),
		FinishedAt:   nanos(c.GetFinishedAt()),
		SandboxId:    sandboxID,
		Image:        image,
		StopSignal:   StopSignalName(c.GetStopSignal()),
		Resources:    linuxResources(c.GetResources().GetLinux()),
		// the memory request it was created with, when recorded.
		MemoryRequestBytes: memoryRequest(c.GetAnnotations()),
	}
}

func memoryRequest(ann map[string]string) *int64 {
	v, ok := ann[crilabels.MemoryRequest]
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// linuxResources is what the runtime reports a container has;
// nil when it reports nothing.
func linuxResources(l *runtimeapi.LinuxContainerResources) *syncpodv1.LinuxResources {
	if l == nil {
		return nil
	}
	return &syncpodv1.LinuxResources{CpuShares: l.GetCpuShares(), CpuQuota: l.GetCpuQuota(),
		CpuPeriod: l.GetCpuPeriod(), MemoryLimitBytes: l.GetMemoryLimitInBytes()}
}

// signalName turns the tail of a CRI Signal enum name into Kubernetes'
// spelling: SIGRTMINPLUS3 is "SIGRTMIN+3", SIGRTMAXMINUS1 "SIGRTMAX-1".
var signalName = strings.NewReplacer("PLUS", "+", "MINUS", "-")

// StopSignalName is the Kubernetes name of the stop signal a runtime
// reports for a container, "" for RUNTIME_DEFAULT (a runtime that reports
// none) or a value the CRI does not name, as the kubelet then leaves the
// status' stopSignal unset.
func StopSignalName(s runtimeapi.Signal) string {
	n, ok := runtimeapi.Signal_name[int32(s)]
	if !ok || s == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		return ""
	}
	return signalName.Replace(strings.TrimPrefix(n, "SIGNAL_"))
}

// PodIdentity fills uid, name and namespace from a sandbox's labels and
// metadata.
func PodIdentity(p *syncpodv1.ObservedPod, s *runtimeapi.PodSandboxStatus) {
	if p.Uid == "" {
		p.Uid = s.GetLabels()[crilabels.PodUID]
		if p.Uid == "" {
			p.Uid = s.GetMetadata().GetUid()
		}
	}
	p.Name = cmp.Or(s.GetLabels()[crilabels.PodName], s.GetMetadata().GetName(), p.Name)
	p.Namespace = cmp.Or(s.GetLabels()[crilabels.PodNamespace], s.GetMetadata().GetNamespace(), p.Namespace)
}

// Sort orders a pod's sandboxes and containers newest first (by
// created_at, then id for a stable order).
func Sort(p *syncpodv1.ObservedPod) {
	slices.SortStableFunc(p.Sandboxes, func(a, b *syncpodv1.ObservedSandbox) int {
		return cmp.Or(b.GetCreatedAt().AsTime().Compare(a.GetCreatedAt().AsTime()), cmp.Compare(a.GetId(), b.GetId()))
	})
	slices.SortStableFunc(p.Containers, func(a, b *syncpodv1.ObservedContainer) int {
		return cmp.Or(b.GetCreatedAt().AsTime().Compare(a.GetCreatedAt().AsTime()), cmp.Compare(a.GetId(), b.GetId()))
	})
}

// Inspected is the result of inspecting one pod: the statuses of its
// sandboxes and of its containers, each container with its sandbox id from
// the listing.
type Inspected struct {
	// Sandboxes are the sandbox statuses.
	Sandboxes []*runtimeapi.PodSandboxStatus
	// Containers are the container statuses.
	Containers []*runtimeapi.ContainerStatus
	// SandboxOf maps a container id to its sandbox id.
	SandboxOf map[string]string
}

// Pod builds the ObservedPod of uid from an inspection, stamped observedAt.
func Pod(uid string, in Inspected, observedAt time.Time) *syncpodv1.ObservedPod {
	p := &syncpodv1.ObservedPod{Uid: uid, ObservedAt: timestamppb.New(observedAt)}
	for _, s := range in.Sandboxes {
		p.Sandboxes = append(p.Sandboxes, Sandbox(s))
	}
	for _, c := range in.Containers {
		p.Containers = append(p.Containers, Container(c, in.SandboxOf[c.GetId()]))
	}
	Sort(p)
	// Identity from the newest sandbox.
	var newest *runtimeapi.PodSandboxStatus
	for _, s := range in.Sandboxes {
		if newest == nil || s.GetCreatedAt() > newest.GetCreatedAt() {
			newest = s
		}
	}
	if newest != nil {
		PodIdentity(p, newest)
	}
	return p
}
