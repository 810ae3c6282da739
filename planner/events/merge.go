package events

import (
	"google.golang.org/protobuf/proto"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// DefaultMaxPerPod is the default bound on the events kept per pod.
const DefaultMaxPerPod = 100

// Same reports whether a and b are repeats of one event: same pod, type,
// reason, message and involved container.
func Same(a, b *syncpodv1.Event) bool {
	return a.GetPodUid() == b.GetPodUid() &&
		a.GetType() == b.GetType() &&
		a.GetReason() == b.GetReason() &&
		a.GetMessage() == b.GetMessage() &&
		a.GetInvolvedContainer() == b.GetInvolvedContainer()
}

// Merge returns list with add folded in, in order: a repeat of an existing
// event adds its count (at least 1) to it, keeps the first first_time,
// takes the newer last_time and moves it to the end; anything else is
// appended. The result keeps at most max events (max <= 0 means
// DefaultMaxPerPod), dropping the oldest. Neither input is modified.
func Merge(list, add []*syncpodv1.Event, max int) []*syncpodv1.Event {
	if max <= 0 {
		max = DefaultMaxPerPod
	}
	out := make([]*syncpodv1.Event, 0, len(list)+len(add))
	for _, e := range list {
		out = append(out, proto.Clone(e).(*syncpodv1.Event))
	}
	for _, e := range add {
		n := proto.Clone(e).(*syncpodv1.Event)
		if n.GetCount() < 1 {
			n.Count = 1
		}
		if n.GetFirstTime() == nil {
			n.FirstTime = n.GetLastTime()
		}
		if n.GetLastTime() == nil {
			n.LastTime = n.GetFirstTime()
		}
		idx := -1
		for i := len(out) - 1; i >= 0; i-- {
			if Same(out[i], n) {
				idx = i
				break
			}
		}
		if idx >= 0 {
			old := out[idx]
			n.Count += old.GetCount()
			if old.GetFirstTime() != nil && (n.GetFirstTime() == nil || old.GetFirstTime().AsTime().Before(n.GetFirstTime().AsTime())) {
				n.FirstTime = old.GetFirstTime()
			}
			if old.GetLastTime() != nil && (n.GetLastTime() == nil || old.GetLastTime().AsTime().After(n.GetLastTime().AsTime())) {
				n.LastTime = old.GetLastTime()
			}
			out = append(out[:idx], out[idx+1:]...)
		}
		out = append(out, n)
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}
