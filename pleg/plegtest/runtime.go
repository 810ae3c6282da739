package plegtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/syncpod/syncpod/cri/crilabels"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// EventsMode is how the fake answers GetContainerEvents.
type EventsMode int

const (
	// EventsUnimplemented answers codes.Unimplemented, like containerd 1.6.
	EventsUnimplemented EventsMode = iota
	// EventsOffered streams the events given to Emit.
	EventsOffered
)

// Runtime is an in-memory CRI runtime. All methods are safe for concurrent
// use. Objects are stored as given; list and status calls return copies.
type Runtime struct {
	mu         sync.Mutex
	sandboxes  map[string]*runtimeapi.PodSandboxStatus
	containers map[string]*containerRec
	// ListErr, when set, fails every list call.
	listErr error
	// inspectHook runs before every status call with the object id.
	inspectHook func(ctx context.Context, id string) error
	events      EventsMode
	streams     map[chan *runtimeapi.ContainerEventResponse]chan error
	// held queues emitted events while HoldEvents(true) is in force: a
	// backlog the runtime has produced and the PLEG not yet received.
	holding bool
	held    []*runtimeapi.ContainerEventResponse
	calls   map[string]int
}

type containerRec struct {
	status    *runtimeapi.ContainerStatus
	sandboxID string
}

// NewRuntime returns an empty runtime answering GetContainerEvents per mode.
func NewRuntime(mode EventsMode) *Runtime {
	return &Runtime{
		sandboxes:  map[string]*runtimeapi.PodSandboxStatus{},
		containers: map[string]*containerRec{},
		events:     mode,
		streams:    map[chan *runtimeapi.ContainerEventResponse]chan error{},
		calls:      map[string]int{},
	}
}

// SetListErr makes list calls fail with err (nil: succeed).
func (r *Runtime) SetListErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listErr = err
}

// SetInspectHook runs hook before every PodSandboxStatus and
// ContainerStatus call; a non-nil error fails the call. The hook may block
// until ctx is done to simulate a hanging runtime.
func (r *Runtime) SetInspectHook(hook func(ctx context.Context, id string) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inspectHook = hook
}

// Calls returns how many times method was called.
func (r *Runtime) Calls(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[method]
}

// AddSandbox adds a ready, host-network sandbox of pod uid, labelled as the
// executor labels it.
func (r *Runtime) AddSandbox(uid, id string, attempt uint32, createdAt int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandboxes[id] = &runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "default", Uid: uid, Attempt: attempt},
		State:     runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: createdAt,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_NODE,
		}}},
		Labels: map[string]string{
			crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid,
			crilabels.PodName: "pod-" + uid, crilabels.PodNamespace: "default",
		},
	}
}

// SetSandboxState sets a sandbox's state.
func (r *Runtime) SetSandboxState(id string, st runtimeapi.PodSandboxState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandboxes[id].State = st
}

// AddContainer adds a running container named name to a sandbox, with the
// given spec hash label and restart count annotation.
func (r *Runtime) AddContainer(sandboxID, id, name, specHash string, restarts int, createdAt int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	uid := r.sandboxes[sandboxID].GetMetadata().GetUid()
	r.containers[id] = &containerRec{sandboxID: sandboxID, status: &runtimeapi.ContainerStatus{
		Id:        id,
		Metadata:  &runtimeapi.ContainerMetadata{Name: name},
		State:     runtimeapi.ContainerState_CONTAINER_RUNNING,
		CreatedAt: createdAt,
		StartedAt: createdAt + 1,
		Image:     &runtimeapi.ImageSpec{Image: "busybox"},
		Labels: map[string]string{
			crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid,
			crilabels.ContainerName: name, crilabels.SpecHash: specHash,
		},
		Annotations: map[string]string{crilabels.RestartCount: strconv.Itoa(restarts)},
	}}
}

// ExitContainer marks a container exited with code at finishedAt.
func (r *Runtime) ExitContainer(id string, code int32, reason string, finishedAt int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.containers[id].status
	s.State = runtimeapi.ContainerState_CONTAINER_EXITED
	s.ExitCode, s.Reason, s.FinishedAt = code, reason, finishedAt
}

// SetContainerState sets a container's state.
func (r *Runtime) SetContainerState(id string, st runtimeapi.ContainerState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.containers[id].status.State = st
}

// Remove removes a container or sandbox (a sandbox with its containers).
func (r *Runtime) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.containers, id)
	if _, ok := r.sandboxes[id]; ok {
		delete(r.sandboxes, id)
		for cid, c := range r.containers {
			if c.sandboxID == id {
				delete(r.containers, cid)
			}
		}
	}
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// ListPodSandbox lists sandboxes matching the filter's label selector.
func (r *Runtime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls["ListPodSandbox"]++
	if r.listErr != nil {
		return nil, r.listErr
	}
	out := make([]*runtimeapi.PodSandbox, 0, len(r.sandboxes))
	for _, id := range slices.Sorted(maps.Keys(r.sandboxes)) {
		s := r.sandboxes[id]
		if !matches(f.GetLabelSelector(), s.Labels) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{Id: s.Id, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, Labels: s.Labels})
	}
	return out, nil
}

// ListContainers lists containers matching the filter's label selector.
func (r *Runtime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls["ListContainers"]++
	if r.listErr != nil {
		return nil, r.listErr
	}
	out := make([]*runtimeapi.Container, 0, len(r.containers))
	for _, id := range slices.Sorted(maps.Keys(r.containers)) {
		c := r.containers[id]
		if !matches(f.GetLabelSelector(), c.status.Labels) {
			continue
		}
		s := c.status
		out = append(out, &runtimeapi.Container{Id: s.Id, PodSandboxId: c.sandboxID, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, Labels: s.Labels, Annotations: s.Annotations, Image: s.Image})
	}
	return out, nil
}

func (r *Runtime) hook(ctx context.Context, method, id string) error {
	r.mu.Lock()
	r.calls[method]++
	h := r.inspectHook
	r.mu.Unlock()
	if h != nil {
		return h(ctx, id)
	}
	return nil
}

// PodSandboxStatus returns a copy of a sandbox's status.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.hook(ctx, "PodSandboxStatus", id); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "sandbox %s not found", id)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: proto.Clone(s).(*runtimeapi.PodSandboxStatus)}, nil
}

// ContainerStatus returns a copy of a container's status.
func (r *Runtime) ContainerStatus(ctx context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.hook(ctx, "ContainerStatus", id); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %s not found", id)
	}
	return &runtimeapi.ContainerStatusResponse{Status: r.containerCopy(c)}, nil
}

func (r *Runtime) containerCopy(c *containerRec) *runtimeapi.ContainerStatus {
	s := c.status
	return &runtimeapi.ContainerStatus{
		Id: s.Id, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, StartedAt: s.StartedAt,
		FinishedAt: s.FinishedAt, ExitCode: s.ExitCode, Image: s.Image, Reason: s.Reason, Message: s.Message,
		Labels: s.Labels, Annotations: s.Annotations,
	}
}

// GetContainerEvents streams events given to Emit until ctx is done or
// FailStreams is called; it answers Unimplemented in EventsUnimplemented
// mode.
func (r *Runtime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, cb func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	r.mu.Lock()
	r.calls["GetContainerEvents"]++
	if r.events == EventsUnimplemented {
		r.mu.Unlock()
		return status.Error(codes.Unimplemented, "unknown method GetContainerEvents for service runtime.v1.RuntimeService")
	}
	in := make(chan *runtimeapi.ContainerEventResponse, 100)
	fail := make(chan error, 1)
	r.streams[in] = fail
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.streams, in)
		r.mu.Unlock()
	}()
	if cb != nil {
		cb(nil)
	}
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case err := <-fail:
			return err
		case ev := <-in:
			select {
			case ch <- ev:
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
		}
	}
}

// Streams is the number of open event streams.
func (r *Runtime) Streams() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.streams)
}

// Event builds the CRI event the runtime would send about container (or
// sandbox) id of sandbox sandboxID, with the current statuses of every
// container of the sandbox, as containerd sends it.
func (r *Runtime) Event(id, sandboxID string, t runtimeapi.ContainerEventType, createdAt int64) *runtimeapi.ContainerEventResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.event(id, sandboxID, t, createdAt)
	for _, cid := range slices.Sorted(maps.Keys(r.containers)) {
		if c := r.containers[cid]; c.sandboxID == sandboxID {
			ev.ContainersStatuses = append(ev.ContainersStatuses, r.containerCopy(c))
		}
	}
	return ev
}

// SingleEvent builds the CRI event about container (or sandbox) id of
// sandbox sandboxID as crisim sends it: the sandbox's status and only the
// status of the container the event is about (none when id is the sandbox
// or the container is gone).
func (r *Runtime) SingleEvent(id, sandboxID string, t runtimeapi.ContainerEventType, createdAt int64) *runtimeapi.ContainerEventResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.event(id, sandboxID, t, createdAt)
	if c, ok := r.containers[id]; ok && c.sandboxID == sandboxID {
		ev.ContainersStatuses = []*runtimeapi.ContainerStatus{r.containerCopy(c)}
	}
	return ev
}

func (r *Runtime) event(id, sandboxID string, t runtimeapi.ContainerEventType, createdAt int64) *runtimeapi.ContainerEventResponse {
	ev := &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: t, CreatedAt: createdAt}
	if s, ok := r.sandboxes[sandboxID]; ok {
		ev.PodSandboxStatus = proto.Clone(s).(*runtimeapi.PodSandboxStatus)
	}
	return ev
}

// Emit sends ev on every open event stream, or queues it while events are
// held (HoldEvents).
func (r *Runtime) Emit(ev *runtimeapi.ContainerEventResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holding {
		r.held = append(r.held, ev)
		return
	}
	for in := range r.streams {
		in <- ev
	}
}

// HoldEvents(true) makes Emit queue events instead of sending them, like a
// runtime (or a transport) that has a backlog the PLEG has not received
// yet; HoldEvents(false) sends the queue, in order, on every open stream.
// The queue is unbounded: streams forward events as they get them, so a
// test can release more events than a stream buffers.
func (r *Runtime) HoldEvents(hold bool) {
	r.mu.Lock()
	r.holding = hold
	var release []*runtimeapi.ContainerEventResponse
	var streams []chan *runtimeapi.ContainerEventResponse
	if !hold {
		release, r.held = r.held, nil
		streams = slices.Collect(maps.Keys(r.streams))
	}
	r.mu.Unlock()
	for _, ev := range release {
		for _, in := range streams {
			in <- ev
		}
	}
}

// FailStreams ends every open event stream with err.
func (r *Runtime) FailStreams(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, fail := range r.streams {
		select {
		case fail <- err:
		default:
		}
	}
}

// String summarises the runtime for test failure messages.
func (r *Runtime) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("runtime{%d sandboxes, %d containers}", len(r.sandboxes), len(r.containers))
}
