package events

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// New builds one event about pod at time at (count 1).
func New(pod *syncpodv1.Pod, typ syncpodv1.EventType, reason, container, message string, at time.Time) *syncpodv1.Event {
	ts := timestamppb.New(at)
	return &syncpodv1.Event{
		Type:              typ,
		Reason:            reason,
		Message:           message,
		InvolvedContainer: container,
		FirstTime:         ts,
		LastTime:          proto.Clone(ts).(*timestamppb.Timestamp),
		Count:             1,
		PodUid:            pod.GetUid(),
		PodName:           pod.GetName(),
		PodNamespace:      pod.GetNamespace(),
	}
}
