package evented

import (
	"context"
	"slices"
	"time"

	"github.com/syncpod/syncpod/pleg/cache"
	"github.com/syncpod/syncpod/pleg/diff"
	"github.com/syncpod/syncpod/pleg/observe"
	"github.com/syncpod/syncpod/proto/crilabels"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Source is the part of the CRI runtime service that streams container
// events (k8s.io/cri-api RuntimeService.GetContainerEvents).
type Source interface {
	GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
}

// Consume runs one event stream: established is called once the runtime
// accepted the call, then handle for every event in order. It returns
// when the stream ends, with its error (ctx's when ctx is done).
func Consume(ctx context.Context, src Source, handle func(*runtimeapi.ContainerEventResponse), established func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan *runtimeapi.ContainerEventResponse, 64)
	errc := make(chan error, 1)
	go func() {
		errc <- src.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) {
			if established != nil {
				established()
			}
		})
	}()
	for {
		select {
		case ev := <-ch:
			handle(ev)
		case err := <-errc:
			// The stream goroutine has returned: nothing more is sent on ch
			// except what it already queued.
			for {
				select {
				case ev := <-ch:
					handle(ev)
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

// Result is what Apply did with one event.
type Result struct {
	// UID is the pod's uid; empty when the event was ignored.
	UID string
	// Events are the lifecycle events to forward (possibly none).
	Events []diff.Event
	// Observed is the pod's status after the event (an empty one with only
	// the uid when the pod is gone), nil when the cache did not change.
	Observed *syncpodv1.ObservedPod
	// Time is the event's creation time.
	Time time.Time
}

// Apply applies one CRI event to c (rule) and returns the events to
// forward (rule ).
func Apply(c *cache.Cache, ev *runtimeapi.ContainerEventResponse) Result {
	sb := ev.GetPodSandboxStatus()
	if sb == nil || sb.GetLabels()[crilabels.Managed] != crilabels.ManagedValue {
		return Result{} // no sandbox metadata (or not syncpod's): ignored
	}
	probe := &syncpodv1.ObservedPod{}
	observe.PodIdentity(probe, sb)
	uid := probe.GetUid()
	if uid == "" {
		return Result{}
	}
	t := time.Unix(0, ev.GetCreatedAt())
	res := Result{UID: uid, Time: t}
	ev1 := func(typ plegv1.PodLifecycleEventType) diff.Event {
		return diff.Event{PodUID: uid, Type: typ, ContainerID: ev.GetContainerId()}
	}
	switch ev.GetContainerEventType() {
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		res.Events = []diff.Event{
			ev1(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED),
			ev1(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_REMOVED),
		}
		prev, _ := c.Get(uid)
		if ev.GetContainerId() == sb.GetId() {
			res.Observed = dropSandbox(prev, uid, sb.GetId(), t)
			if len(res.Observed.GetSandboxes()) == 0 {
				c.Delete(uid)
				res.Observed = &syncpodv1.ObservedPod{Uid: uid}
			} else {
				c.Set(uid, res.Observed, t)
			}
			return res
		}
		pod := observe.MergeEvent(prev, ev, t)
		pod.Containers = slices.DeleteFunc(pod.Containers, func(oc *syncpodv1.ObservedContainer) bool { return oc.GetId() == ev.GetContainerId() })
		if c.SetIfNewer(uid, pod, t) {
			res.Observed = pod
		}
		return res
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		res.Events = []diff.Event{ev1(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED)}
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		res.Events = []diff.Event{ev1(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED)}
	}
	prev, _ := c.Get(uid)
	pod := observe.MergeEvent(prev, ev, t)
	if !c.SetIfNewer(uid, pod, t) {
		return Result{UID: uid, Time: t} // stale, not forwarded
	}
	res.Observed = pod
	return res
}

// dropSandbox returns prev without sandbox id and its containers.
func dropSandbox(prev *syncpodv1.ObservedPod, uid, id string, t time.Time) *syncpodv1.ObservedPod {
	var p *syncpodv1.ObservedPod
	if prev != nil {
		p = proto.Clone(prev).(*syncpodv1.ObservedPod)
	} else {
		p = &syncpodv1.ObservedPod{Uid: uid}
	}
	p.ObservedAt = timestamppb.New(t)
	p.Sandboxes = slices.DeleteFunc(p.Sandboxes, func(s *syncpodv1.ObservedSandbox) bool { return s.GetId() == id })
	p.Containers = slices.DeleteFunc(p.Containers, func(c *syncpodv1.ObservedContainer) bool { return c.GetSandboxId() == id })
	return p
}
