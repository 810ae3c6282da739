package critest

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/internal/errgrpc"
)

// EventsMode is how the fake answers GetContainerEvents.
type EventsMode int

const (
	// EventsUnimplemented answers codes.Unimplemented, like containerd 1.6.
	EventsUnimplemented EventsMode = iota
	// EventsOffered streams the events given to Emit.
	EventsOffered
)

// observerState is what the PLEG's knobs keep; guarded by Runtime.mu.
type observerState struct {
	// listErr, when set, fails every list call.
	listErr error
	// inspectHook runs before every status call with the object id.
	inspectHook func(ctx context.Context, id string) error
	events      EventsMode
	streams     map[chan *runtimeapi.ContainerEventResponse]chan error
	// held queues emitted events while HoldEvents(true) is in force: a
	// backlog the runtime has produced and the PLEG not yet received.
	holding bool
	held    []*runtimeapi.ContainerEventResponse
}

// WithEvents sets how GetContainerEvents answers and returns r.
func (r *Runtime) WithEvents(mode EventsMode) *Runtime {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs.events = mode
	return r
}

// SetListErr makes list calls fail with err (nil: succeed).
func (r *Runtime) SetListErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs.listErr = err
}

// SetInspectHook runs hook before every PodSandboxStatus and
// ContainerStatus call; a non-nil error fails the call. The hook may block
// until ctx is done to simulate a hanging runtime.
func (r *Runtime) SetInspectHook(hook func(ctx context.Context, id string) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs.inspectHook = hook
}

// listCall records a list call and returns the error it answers: the
// list error in force (SetListErr), else one injected for it.
func (r *Runtime) listCall(method string) error {
	err := r.call(method)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.obs.listErr != nil {
		return r.obs.listErr
	}
	return err
}

// ListPodSandbox lists the sandboxes matching the filter, by id, unless
// SetListErr is in force.
func (r *Runtime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if err := r.listCall("ListPodSandbox"); err != nil {
		return nil, err
	}
	resp, err := r.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: f})
	if err != nil {
		return nil, err
	}
	out := proto.Clone(resp).(*runtimeapi.ListPodSandboxResponse).GetItems()
	sortByID(out)
	return out, nil
}

// ListContainers lists the containers matching the filter, by id, unless
// SetListErr is in force.
func (r *Runtime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if err := r.listCall("ListContainers"); err != nil {
		return nil, err
	}
	resp, err := r.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: f})
	if err != nil {
		return nil, err
	}
	out := proto.Clone(resp).(*runtimeapi.ListContainersResponse).GetContainers()
	sortByID(out)
	return out, nil
}

// statusCall records a status call, then runs the inspect hook outside
// any lock; it returns the error the call answers: one injected for it,
// else the hook's.
func (r *Runtime) statusCall(ctx context.Context, method, id string) error {
	if err := r.call(method); err != nil {
		return err
	}
	r.mu.Lock()
	h := r.obs.inspectHook
	r.mu.Unlock()
	if h != nil {
		return h(ctx, id)
	}
	return nil
}

// PodSandboxStatus returns a sandbox's status, after the inspect hook;
// a missing sandbox is NotFound.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.statusCall(ctx, "PodSandboxStatus", id); err != nil {
		return nil, err
	}
	resp, err := r.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose})
	if err != nil {
		return nil, err
	}
	return proto.Clone(resp).(*runtimeapi.PodSandboxStatusResponse), nil
}

// ContainerStatus returns a container's status, after the inspect hook;
// a missing container is NotFound.
func (r *Runtime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.statusCall(ctx, "ContainerStatus", id); err != nil {
		return nil, err
	}
	resp, err := r.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
	if err != nil {
		return nil, err
	}
	return proto.Clone(resp).(*runtimeapi.ContainerStatusResponse), nil
}

// GetContainerEvents streams events given to Emit until ctx is done or
// FailStreams is called; it answers Unimplemented in EventsUnimplemented
// mode.
func (r *Runtime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, cb func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	if err := r.call("GetContainerEvents"); err != nil {
		return err
	}
	r.mu.Lock()
	if r.obs.events == EventsUnimplemented {
		r.mu.Unlock()
		return errgrpc.ToGRPC(errgrpc.New(errgrpc.ErrUnimplemented, "unknown method GetContainerEvents for service runtime.v1.RuntimeService"))
	}
	in := make(chan *runtimeapi.ContainerEventResponse, 100)
	fail := make(chan error, 1)
	r.obs.streams[in] = fail
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.obs.streams, in)
		r.mu.Unlock()
	}()
	if cb != nil {
		cb(nil)
	}
	for {
		select {
		case <-ctx.Done():
			return errgrpc.ToGRPC(ctx.Err())
		case err := <-fail:
			return err
		case ev := <-in:
			select {
			case ch <- ev:
			case <-ctx.Done():
				return errgrpc.ToGRPC(ctx.Err())
			}
		}
	}
}

// Streams is the number of open event streams.
func (r *Runtime) Streams() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.obs.streams)
}

// Event builds the CRI event the runtime would send about container (or
// sandbox) id of sandbox sandboxID, with the current statuses of every
// container of the sandbox (by id), as containerd sends it.
func (r *Runtime) Event(id, sandboxID string, t runtimeapi.ContainerEventType, createdAt int64) *runtimeapi.ContainerEventResponse {
	ev := r.event(id, sandboxID, t, createdAt)
	resp, err := r.rs.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sandboxID}})
	if err != nil {
		panic(fmt.Sprintf("critest: %v", err))
	}
	cs := resp.GetContainers()
	sortByID(cs)
	for _, c := range cs {
		if st, _ := r.containerStatus(c.GetId()); st != nil {
			ev.ContainersStatuses = append(ev.ContainersStatuses, st)
		}
	}
	return ev
}

// SingleEvent builds the CRI event about container (or sandbox) id of
// sandbox sandboxID as crisim sends it: the sandbox's status and only the
// status of the container the event is about (none when id is the sandbox
// or the container is gone).
func (r *Runtime) SingleEvent(id, sandboxID string, t runtimeapi.ContainerEventType, createdAt int64) *runtimeapi.ContainerEventResponse {
	ev := r.event(id, sandboxID, t, createdAt)
	if st, sb := r.containerStatus(id); st != nil && sb == sandboxID {
		ev.ContainersStatuses = []*runtimeapi.ContainerStatus{st}
	}
	return ev
}

// event builds an event with the sandbox's status.
func (r *Runtime) event(id, sandboxID string, t runtimeapi.ContainerEventType, createdAt int64) *runtimeapi.ContainerEventResponse {
	ev := &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: t, CreatedAt: createdAt}
	if resp, err := r.rs.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID}); err == nil {
		ev.PodSandboxStatus = proto.Clone(resp.GetStatus()).(*runtimeapi.PodSandboxStatus)
	}
	return ev
}

// Emit sends ev on every open event stream, or queues it while events are
// held (HoldEvents).
func (r *Runtime) Emit(ev *runtimeapi.ContainerEventResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.obs.holding {
		r.obs.held = append(r.obs.held, ev)
		return
	}
	for in := range r.obs.streams {
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
	r.obs.holding = hold
	var release []*runtimeapi.ContainerEventResponse
	var streams []chan *runtimeapi.ContainerEventResponse
	if !hold {
		release, r.obs.held = r.obs.held, nil
		streams = slices.Collect(maps.Keys(r.obs.streams))
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
	for _, fail := range r.obs.streams {
		select {
		case fail <- err:
		default:
		}
	}
}

// String summarises the runtime for test failure messages.
func (r *Runtime) String() string {
	sbs, _ := r.rs.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{})
	cs, _ := r.rs.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	return fmt.Sprintf("runtime{%d sandboxes, %d containers}", len(sbs.GetItems()), len(cs.GetContainers()))
}
