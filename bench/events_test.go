package bench

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
)

// lateRefusal answers GetContainerEvents as cri-client does against
// containerd 1.6: the stream opens (the established callback runs), and
// only its first receive says Unimplemented.
type lateRefusal struct{ *critest.Runtime }

func (lateRefusal) GetContainerEvents(_ context.Context, _ chan *runtimeapi.ContainerEventResponse, cb func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	if cb != nil {
		cb(nil)
	}
	return status.Error(codes.Unimplemented, "unknown method GetContainerEvents for service runtime.v1.RuntimeService")
}

// TestARuntimeThatRefusesEventsOnTheFirstReceiveOffersNone: a runtime
// whose event stream opens and is then refused (containerd 1.6 through
// cri-client) offers no events: the waits poll it, and the paired
// replacement row, whose floor replaces containers on their stop events,
// is left out instead of waiting out its timeout for a replacement that
// never comes.
func TestARuntimeThatRefusesEventsOnTheFirstReceiveOffersNone(t *testing.T) {
	rt := &Runtime{RS: lateRefusal{critest.NewRuntime()}, IS: critest.NewImages("img")}
	if rt.FollowEvents(t.Context()) {
		t.Error("FollowEvents = true for a runtime that refuses the stream on its first receive")
	}
	if rt.OffersEvents(t.Context()) {
		t.Error("OffersEvents = true for a runtime that refuses the stream on its first receive")
	}
	floor := &RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}
	if err := floor.FollowReplacements(t.Context()); err == nil {
		t.Error("FollowReplacements accepted a refused event stream")
	}
	agent := otherAgent{&RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}}
	res, err := Run(t.Context(), rt, agent, Options{Kills: 1, Only: []string{MeasureReplacementPaired}, Floor: floor, Settle: -1, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 0 {
		t.Fatalf("results %+v, want the paired replacement row left out", res)
	}
}

// TestARuntimeThatServesEventsOffersThem: the window that waits for a
// refusal does not take a quiet stream for one.
func TestARuntimeThatServesEventsOffersThem(t *testing.T) {
	rt := &Runtime{RS: critest.NewRuntime().WithEvents(critest.EventsOffered), IS: critest.NewImages("img")}
	if !rt.OffersEvents(t.Context()) {
		t.Error("OffersEvents = false for a runtime that serves events")
	}
}
