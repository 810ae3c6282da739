package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// PollInterval is how often the runtime is listed while waiting, when it
// offers no CRI events (containerd 1.6).
const PollInterval = 10 * time.Millisecond

// EventSafetyInterval is how often the runtime is listed while waiting
// when its CRI events are followed: a look after every event, and this
// one in case an event was never sent.
const EventSafetyInterval = 100 * time.Millisecond

// eventSafety is EventSafetyInterval; tests lengthen it.
var eventSafety = EventSafetyInterval

// Runtime watches (and, for the raw-CRI agent and the kills, drives) the
// CRI runtime every agent runs on.
type Runtime struct {
	RS internalapi.RuntimeService
	IS internalapi.ImageManagerService

	mu      sync.Mutex
	changed chan struct{} // closed at the next runtime event; nil while no events are followed

	// retryDelay spaces removeSandbox's tries (0: two seconds).
	retryDelay time.Duration
}

// CallTimeout bounds each CRI call (the client uses its connection
// timeout for every call): 50 sandboxes asked for at once on a loaded
// machine take longer than the 10 s the client would otherwise allow.
const CallTimeout = 2 * time.Minute

// Dial connects to a CRI endpoint.
func Dial(ctx context.Context, endpoint string) (*Runtime, error) {
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(CallTimeout).
		WithTracerProvider(nil).WithUseStreaming(false).Build(ctx)
	if err != nil {
		return nil, err
	}
	is, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(CallTimeout).
		WithTracerProvider(nil).WithUseStreaming(false).Build(ctx)
	if err != nil {
		return nil, err
	}
	return &Runtime{RS: rs, IS: is}, nil
}

// FollowEvents follows the runtime's CRI container events until ctx ends,
// so that the waits below look at the runtime when it reports a change
// (and every EventSafetyInterval) instead of listing it every
// PollInterval. Listing a runtime a hundred times a second while an agent
// starts or stops pods on it slows the agent's own calls, and only the
// agents that work asynchronously (the kubelet, syncpod) were listed
// while they worked: the raw-CRI floor's Apply returns once its pods run.
// It reports whether the runtime accepted the stream (containerd 1.6
// answers Unimplemented: the waits then poll).
func (r *Runtime) FollowEvents(ctx context.Context) bool {
	ch, errc, err := r.events(ctx)
	if err != nil {
		return false
	}
	r.mu.Lock()
	r.changed = make(chan struct{})
	r.mu.Unlock()
	go func() {
		for {
			select {
			case <-ctx.Done():
				r.stopFollowing()
				return
			case <-errc:
				r.stopFollowing() // the stream ended: poll again
				return
			case <-ch:
				r.mu.Lock()
				if r.changed != nil {
					close(r.changed)
					r.changed = make(chan struct{})
				}
				r.mu.Unlock()
			}
		}
	}()
	return true
}

// EventsRefusalWindow is how long events waits, once the stream is open,
// for the runtime to refuse it. Opening a server stream sends the
// request without waiting for an answer: containerd 1.6's Unimplemented
// arrives on the stream's first receive, one loopback round trip later,
// while a runtime that serves events says nothing until it has one.
const EventsRefusalWindow = 500 * time.Millisecond

// events subscribes to the runtime's CRI container events until ctx
// ends. Once the runtime has accepted the stream (it was opened and not
// refused within EventsRefusalWindow) it returns the events and the
// stream's end (its error, once); otherwise why it was refused.
func (r *Runtime) events(ctx context.Context) (<-chan *runtimeapi.ContainerEventResponse, <-chan error, error) {
	ch := make(chan *runtimeapi.ContainerEventResponse, 1024)
	established := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- r.RS.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(established) })
	}()
	refused := func(err error) error {
		if err == nil {
			err = errors.New("the stream ended at once")
		}
		return fmt.Errorf("GetContainerEvents: %w", err)
	}
	select {
	case <-established:
	case err := <-errc:
		return nil, nil, refused(err)
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	t := time.NewTimer(EventsRefusalWindow)
	defer t.Stop()
	select {
	case <-t.C:
		return ch, errc, nil
	case err := <-errc:
		return nil, nil, refused(err)
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// OffersEvents reports whether the runtime serves CRI container events
// (containerd 2.x does, 1.6 does not): it opens the stream and closes it
// again.
func (r *Runtime) OffersEvents(ctx context.Context) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, _, err := r.events(ctx)
	return err == nil
}

func (r *Runtime) stopFollowing() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed != nil {
		close(r.changed) // wake the waiters, who then poll
		r.changed = nil
	}
}

// nextChange is closed at the runtime's next event; nil when events are
// not followed. Taken before a look at the runtime, it misses no change
// made after that look began.
func (r *Runtime) nextChange() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		return nil
	}
	return r.changed
}

// waitChange waits for next (from nextChange) or EventSafetyInterval,
// or for poll when events are not followed.
func waitChange(ctx context.Context, next <-chan struct{}, poll time.Duration) error {
	if next == nil {
		return sleep(ctx, poll)
	}
	t := time.NewTimer(eventSafety)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-next:
	case <-t.C:
	}
	return nil
}

// Version is the runtime's name and version.
func (r *Runtime) Version(ctx context.Context) string {
	v, err := r.RS.Version(ctx, "v1")
	if err != nil {
		return "unknown runtime"
	}
	return v.GetRuntimeName() + " " + v.GetRuntimeVersion()
}

// snapshot is the runtime's sandboxes and containers by sandbox name.
type snapshot struct {
	ready      map[string]bool                    // sandbox name → a READY sandbox exists
	containers map[string][]*runtimeapi.Container // sandbox name → containers
	byID       map[string]*runtimeapi.PodSandbox  // sandbox id → sandbox
}

func (r *Runtime) snapshot(ctx context.Context) (snapshot, error) {
	sbs, err := r.RS.ListPodSandbox(ctx, nil)
	if err != nil {
		return snapshot{}, err
	}
	cs, err := r.RS.ListContainers(ctx, nil)
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{ready: map[string]bool{}, containers: map[string][]*runtimeapi.Container{}, byID: map[string]*runtimeapi.PodSandbox{}}
	for _, sb := range sbs {
		s.byID[sb.GetId()] = sb
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			s.ready[sb.GetMetadata().GetName()] = true
		}
	}
	for _, c := range cs {
		if sb := s.byID[c.GetPodSandboxId()]; sb != nil {
			n := sb.GetMetadata().GetName()
			s.containers[n] = append(s.containers[n], c)
		}
	}
	return s, nil
}

// Started is a running container as the runtime reports it.
type Started struct {
	ID string
	// SandboxCreated, Created and Started are the runtime's times: the
	// pod's sandbox created, the container created, the container started.
	SandboxCreated, Created, Started time.Time
}

// WaitStarted waits until every sandbox name has a running container
// other than the ids in except, and returns each one.
func (r *Runtime) WaitStarted(ctx context.Context, names []string, except map[string]bool) (map[string]Started, error) {
	started := map[string]Started{}
	for len(started) < len(names) {
		next := r.nextChange()
		s, err := r.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if _, ok := started[n]; ok {
				continue
			}
			for _, c := range s.containers[n] {
				if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || except[c.GetId()] {
					continue
				}
				st, err := r.RS.ContainerStatus(ctx, c.GetId(), false)
				if err != nil || st.GetStatus().GetStartedAt() == 0 {
					continue
				}
				started[n] = Started{ID: c.GetId(), SandboxCreated: time.Unix(0, s.byID[c.GetPodSandboxId()].GetCreatedAt()),
					Created: time.Unix(0, st.GetStatus().GetCreatedAt()), Started: time.Unix(0, st.GetStatus().GetStartedAt())}
			}
		}
		if len(started) == len(names) {
			break
		}
		if err := waitChange(ctx, next, PollInterval); err != nil {
			return nil, fmt.Errorf("waiting for %d of %d pods to start: %w", len(names)-len(started), len(names), err)
		}
	}
	return started, nil
}

// WaitStopped waits until no sandbox of names is READY and returns when
// that was first seen.
func (r *Runtime) WaitStopped(ctx context.Context, names []string) (time.Time, error) {
	for {
		next := r.nextChange()
		s, err := r.snapshot(ctx)
		if err != nil {
			return time.Time{}, err
		}
		seen := time.Now()
		left := 0
		for _, n := range names {
			if s.ready[n] {
				left++
			}
		}
		if left == 0 {
			return seen, nil
		}
		if err := waitChange(ctx, next, PollInterval); err != nil {
			return time.Time{}, fmt.Errorf("waiting for %d sandboxes to stop: %w", left, err)
		}
	}
}

// WaitGone waits until no sandbox of names is listed any more (the agent
// removed them) or until limit passed, whichever comes first, and reports
// whether they went. It lets the next measurement start on a runtime that
// is no longer busy tearing down the previous one's pods: the raw-CRI
// agent removes its sandboxes before Delete returns, syncpod a moment
// after they stopped, the kubelet only at its garbage collection.
func (r *Runtime) WaitGone(ctx context.Context, names []string, limit time.Duration) (bool, error) {
	deadline := time.Now().Add(limit)
	for {
		next := r.nextChange()
		sbs, err := r.RS.ListPodSandbox(ctx, nil)
		if err != nil {
			return false, err
		}
		want := make(map[string]bool, len(names))
		for _, n := range names {
			want[n] = true
		}
		left := 0
		for _, sb := range sbs {
			if want[sb.GetMetadata().GetName()] {
				left++
			}
		}
		if left == 0 {
			return true, nil
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		if err := waitChange(ctx, next, 5*PollInterval); err != nil {
			return false, err
		}
	}
}

// Kill stops container id at once (SIGKILL, as a crash or an OOM kill
// would end it), behind the agent's back, and returns when it finished.
func (r *Runtime) Kill(ctx context.Context, id string) (time.Time, error) {
	if err := r.RS.StopContainer(ctx, id, 0); err != nil {
		return time.Time{}, err
	}
	st, err := r.RS.ContainerStatus(ctx, id, false)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, st.GetStatus().GetFinishedAt()), nil
}

// RemoveSandboxes stops and removes every sandbox whose name is in names
// (what an agent left behind, e.g. the kubelet's exited sandboxes).
func (r *Runtime) RemoveSandboxes(ctx context.Context, names map[string]bool) error {
	_, err := r.removeSandboxes(ctx, names, 1)
	return err
}

// RemoveAllSandboxes stops and removes every pod sandbox of the
// runtime, parallel at a time, and returns how many there were.
func (r *Runtime) RemoveAllSandboxes(ctx context.Context, parallel int) (int, error) {
	return r.removeSandboxes(ctx, nil, parallel)
}

// removeSandboxes stops and removes the sandboxes named in names (nil:
// all), parallel at a time, and returns how many there were. A sandbox
// that cannot be removed does not keep the others from being tried: the
// error names how many failed, and the first failure.
func (r *Runtime) removeSandboxes(ctx context.Context, names map[string]bool, parallel int) (int, error) {
	sbs, err := r.RS.ListPodSandbox(ctx, nil)
	if err != nil {
		return 0, err
	}
	var (
		g      errgroup.Group
		mu     sync.Mutex
		failed int
		first  error
	)
	g.SetLimit(max(parallel, 1))
	n := 0
	for _, sb := range sbs {
		if names != nil && !names[sb.GetMetadata().GetName()] {
			continue
		}
		n++
		g.Go(func() error {
			if err := r.removeSandbox(ctx, sb.GetId()); err != nil {
				mu.Lock()
				failed++
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return n, err
	}
	if failed > 0 {
		return n, fmt.Errorf("%d of %d sandboxes not removed, the first: %w", failed, n, first)
	}
	return n, nil
}

// removeSandbox stops and removes one sandbox, its containers stopped
// first one by one, trying again (up to removeTries in all, two seconds
// apart) when the runtime refuses: an agent stopping the same container
// with a grace period, or a runtime too busy to stop it in time, leaves
// it running when the removal comes.
func (r *Runtime) removeSandbox(ctx context.Context, id string) error {
	var err error
	for try := range removeTries {
		if try > 0 {
			delay := r.retryDelay
			if delay == 0 {
				delay = 2 * time.Second
			}
			if err := sleep(ctx, delay); err != nil {
				return err
			}
		}
		if cs, err := r.RS.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: id}); err == nil {
			for _, c := range cs {
				if c.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
					_ = r.RS.StopContainer(ctx, c.GetId(), 0)
				}
			}
		}
		_ = r.RS.StopPodSandbox(ctx, id)
		if err = r.RS.RemovePodSandbox(ctx, id); err == nil || status.Code(err) == codes.NotFound {
			return nil
		}
	}
	return fmt.Errorf("sandbox %s: %w", id, err)
}

// removeTries is how often removeSandbox tries.
const removeTries = 5

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// StopEvents follows the runtime's CRI container events (containerd 2.x;
// a runtime without them answers Unimplemented and this records nothing)
// and keeps when each container's CONTAINER_STOPPED event was emitted, so
// the time a runtime takes from a process's exit to telling about it can
// be told apart from the agent's.
type StopEvents struct {
	mu sync.Mutex
	at map[string]time.Time
}

// FollowStops starts following the events until ctx ends.
func (r *Runtime) FollowStops(ctx context.Context) *StopEvents {
	s := &StopEvents{at: map[string]time.Time{}}
	ch := make(chan *runtimeapi.ContainerEventResponse, 1024)
	go func() { _ = r.RS.GetContainerEvents(ctx, ch, nil) }()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-ch:
				if ev.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
					s.mu.Lock()
					s.at[ev.GetContainerId()] = time.Unix(0, ev.GetCreatedAt())
					s.mu.Unlock()
				}
			}
		}
	}()
	return s
}

// At is when container id's stop event was emitted, if it was seen.
func (s *StopEvents) At(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[id]
	return t, ok
}
