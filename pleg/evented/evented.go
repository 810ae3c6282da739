package evented

import (
	"context"
	"time"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/pleg/cache"
	"github.com/syncpod/syncpod/pleg/diff"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Source is the part of the CRI runtime service that streams container
// events (k8s.io/cri-api RuntimeService.GetContainerEvents).
type Source interface {
	GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
}

// StreamBuffer is the number of events queued between the stream and the
// consumer.
const StreamBuffer = 1024

// MaxBatch bounds the events handed over at once.
const MaxBatch = 512

// Consume runs one event stream: established is called once the runtime
// accepted the call, then handle with the events in order, in batches of
// whatever is queued (1 to MaxBatch events). It returns when the stream
// ends, with its error (ctx's when ctx is done).
func Consume(ctx context.Context, src Source, handle func([]*runtimeapi.ContainerEventResponse), established func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan *runtimeapi.ContainerEventResponse, StreamBuffer)
	errc := make(chan error, 1)
	go func() {
		errc <- src.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) {
			if established != nil {
				established()
			}
		})
	}()
	batch := make([]*runtimeapi.ContainerEventResponse, 0, MaxBatch)
	// drain hands over first and whatever else is queued.
	drain := func(first *runtimeapi.ContainerEventResponse) {
		batch = append(batch[:0], first)
		for len(batch) < MaxBatch {
			select {
			case ev := <-ch:
				batch = append(batch, ev)
				continue
			default:
			}
			break
		}
		handle(batch)
		clear(batch)
	}
	for {
		select {
		case ev := <-ch:
			drain(ev)
		case err := <-errc:
			// The stream goroutine has returned: nothing more is sent on ch
			// except what it already queued.
			for {
				select {
				case ev := <-ch:
					drain(ev)
				default:
					if err == nil {
						err = ctx.Err()
					}
					return err
				}
			}
		}
	}
}

// Change is what one event says about its pod.
type Change struct {
	// UID is the pod's uid; empty when the event is ignored.
	UID string
	// Time is the event's creation time.
	Time time.Time
	// ContainerID is the container (or sandbox) the event is about.
	ContainerID string
	// Deleted: a DELETED event (removals are final, R-14.2 forwards it
	// whatever its time).
	Deleted bool
	// SandboxDeleted: a DELETED event about the sandbox itself.
	SandboxDeleted bool
	// Delta is the cache update.
	Delta cache.Delta
	// Entries are the diff record entries the event sets (the sandbox and
	// the containers it carries); Removed the ids it removes (the deleted
	// container or sandbox; a deleted sandbox's containers are the
	// caller's to find).
	Entries []diff.Entry
	Removed []string
	// Events are the lifecycle events it maps to.
	Events []diff.Event
}

// Decode turns one CRI event into a Change without looking at any state.
// It costs O(statuses in the event).
func Decode(ev *runtimeapi.ContainerEventResponse) Change {
	sb := ev.GetPodSandboxStatus()
	if sb == nil || sb.GetLabels()[crilabels.Managed] != crilabels.ManagedValue {
		return Change{} // no sandbox metadata (or not syncpod's): ignored
	}
	probe := &syncpodv1.ObservedPod{}
	observe.PodIdentity(probe, sb)
	if probe.GetUid() == "" {
		return Change{}
	}
	ch := Change{UID: probe.GetUid(), Time: time.Unix(0, ev.GetCreatedAt()), ContainerID: ev.GetContainerId()}
	ch.Delta.Name, ch.Delta.Namespace = probe.GetName(), probe.GetNamespace()
	ev1 := func(typ plegv1.PodLifecycleEventType) diff.Event {
		return diff.Event{PodUID: ch.UID, Type: typ, ContainerID: ch.ContainerID}
	}
	switch ev.GetContainerEventType() {
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		ch.Deleted = true
		ch.Events = []diff.Event{
			ev1(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED),
			ev1(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_REMOVED),
		}
		ch.Removed = []string{ch.ContainerID}
		if ch.ContainerID == sb.GetId() {
			ch.SandboxDeleted = true
			ch.Delta.RemoveSandboxes = []string{sb.GetId()}
			return ch
		}
		ch.Delta.RemoveContainers = []string{ch.ContainerID}
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		ch.Events = []diff.Event{ev1(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED)}
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		ch.Events = []diff.Event{ev1(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED)}
	}
	ch.Delta.Sandboxes = []*syncpodv1.ObservedSandbox{observe.Sandbox(sb)}
	ch.Entries = make([]diff.Entry, 0, 1+len(ev.GetContainersStatuses()))
	ch.Entries = append(ch.Entries, diff.Entry{ID: sb.GetId(), State: diff.FromSandboxState(sb.GetState()), Sandbox: true})
	for _, c := range ev.GetContainersStatuses() {
		if ch.Deleted && c.GetId() == ch.ContainerID {
			continue // a deleted container's last status: it is gone
		}
		ch.Delta.Containers = append(ch.Delta.Containers, observe.Container(c, sb.GetId()))
		ch.Entries = append(ch.Entries, diff.Entry{ID: c.GetId(), State: diff.FromContainerState(c.GetState())})
	}
	return ch
}

// Apply applies a decoded change to c (rule ): the whole change when
// it is newer than the pod's entry; only its removal when it is a stale
// DELETED event (removals are final). It reports whether the statuses the
// change carries were taken (a stale DELETED reports false) and returns
// the lifecycle events to forward: all of them when taken, a DELETED
// event's always, none otherwise.
func Apply(c *cache.Cache, ch Change) (taken bool, forward []diff.Event) {
	if ch.UID == "" {
		return false, nil
	}
	if c.Apply(ch.UID, ch.Delta, ch.Time) {
		return true, ch.Events
	}
	if !ch.Deleted {
		return false, nil
	}
	c.Apply(ch.UID, cache.Delta{RemoveContainers: ch.Delta.RemoveContainers, RemoveSandboxes: ch.Delta.RemoveSandboxes, Force: true}, ch.Time)
	return false, ch.Events
}
