package crisim

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The event contract with the PLEG: every event carries the sandbox's
// status and only the status of the container it is about; sandbox events
// and DELETED container events carry none.
func TestEventCarriesOnlyItsContainer(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Mode: ModeSimulated})
	ctx := context.Background()
	sb := sandboxFor(t, r, "wide")
	var ids []string
	for i := range 3 {
		id, err := containerIn(t, r, sb, fmt.Sprintf("c%d", i), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	s, err := r.events.subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.events.unsubscribe(s)

	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ids[1]}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ids[1]}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ids[1]}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	type want struct {
		id    string
		typ   runtimeapi.ContainerEventType
		state runtimeapi.ContainerState // of the one status; -1 for none
	}
	wants := []want{
		{ids[1], runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, runtimeapi.ContainerState_CONTAINER_RUNNING},
		{ids[1], runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, runtimeapi.ContainerState_CONTAINER_EXITED},
		{ids[1], runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, -1},
		{sb, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, -1},
	}
	for i, w := range wants {
		var ev *runtimeapi.ContainerEventResponse
		select {
		case ev = <-s.ch:
		default:
			t.Fatalf("event %d (%s of %.8s) was not published", i, w.typ, w.id)
		}
		if ev.GetContainerId() != w.id || ev.GetContainerEventType() != w.typ {
			t.Fatalf("event %d is %s of %.8s, want %s of %.8s", i, ev.GetContainerEventType(), ev.GetContainerId(), w.typ, w.id)
		}
		if ev.GetPodSandboxStatus().GetId() != sb {
			t.Errorf("event %d (%s) lacks the sandbox status", i, w.typ)
		}
		st := ev.GetContainersStatuses()
		switch {
		case w.state == -1 && len(st) != 0:
			t.Errorf("event %d (%s of %.8s) carries %d container statuses, want none", i, w.typ, w.id, len(st))
		case w.state != -1 && (len(st) != 1 || st[0].GetId() != w.id || st[0].GetState() != w.state):
			t.Errorf("event %d (%s) carries %v, want exactly container %.8s in %s", i, w.typ, st, w.id, w.state)
		}
	}
	select {
	case ev := <-s.ch:
		t.Errorf("unexpected extra event %s of %.8s", ev.GetContainerEventType(), ev.GetContainerId())
	default:
	}
}

// A 3,000-container sandbox with a subscriber that stops reading: what
// crisim holds for it is bounded by its buffer of small events (a few
// hundred bytes each, whatever the sandbox's size), and the overflow cuts
// the subscriber off and is counted (an event carrying every container's
// status would make such a sandbox cost gigabytes).
func TestWideSandboxEventsStayBounded(t *testing.T) {
	const n, buffer = 3000, 512
	r, _ := newTestRuntime(t, Options{Mode: ModeSimulated, EventBuffer: buffer})
	sb := sandboxFor(t, r, "wide")
	s, err := r.events.subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.events.unsubscribe(s)
	for i := range n {
		if _, err := containerIn(t, r, sb, fmt.Sprintf("c%d", i), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-s.failed:
	default:
		t.Fatalf("a subscriber %d events behind was not cut off", n)
	}
	if got := testutil.ToFloat64(r.metrics.eventOverflows); got != 1 {
		t.Errorf("overflows counted: %v, want 1", got)
	}
	held, maxStatuses := 0, 0
	for len(s.ch) > 0 {
		ev := <-s.ch
		held += proto.Size(ev)
		maxStatuses = max(maxStatuses, len(ev.GetContainersStatuses()))
	}
	if maxStatuses > 1 || held > buffer*1024 {
		t.Errorf("the cut subscriber's buffer holds %d bytes, events with up to %d statuses; want at most %d bytes, 1 status each", held, maxStatuses, buffer*1024)
	}
	t.Logf("%d buffered events of a %d-container sandbox hold %d bytes", buffer, n, held)
}
