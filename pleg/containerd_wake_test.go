package pleg_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	"github.com/syncpod/syncpod/cri/listcodec"
	"github.com/syncpod/syncpod/pleg"
	"github.com/syncpod/syncpod/pleg/core"
	"github.com/syncpod/syncpod/pleg/wake"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
)

// TestContainerdTaskEventsWakeTheRelist_R34: on the test containerd, in
// relist mode, the PLEG subscribes to containerd's own event service and
// publishes CONTAINER_DIED for a container that is killed, woken by its
// task events: the periodic relist is set to an hour, adaptive or safety
// net, so no periodic relist can have seen the death. At the defaults
// the safety-net period, once the stream is up, is the kubelet's second.
func TestContainerdTaskEventsWakeTheRelist_R34(t *testing.T) {
	ep := containerdtest.Endpoint(t)
	rs := containerdtest.RuntimeService(t)
	ctx := t.Context()
	cfg := containerdtest.HostNetworkSandboxConfig(t)
	labels := map[string]string{crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: cfg.GetMetadata().GetUid(),
		crilabels.PodName: cfg.GetMetadata().GetName(), crilabels.PodNamespace: cfg.GetMetadata().GetNamespace()}
	for k, v := range labels {
		cfg.Labels[k] = v
	}
	sb := containerdtest.RunSandbox(t, rs, cfg)

	newPLEG := func(t *testing.T, mod func(*pleg.Options)) (*pleg.PLEG, *prometheus.Registry) {
		conn := cri.NewConn(ep, 30*time.Second, nil, cri.WithListCodec(listcodec.NewGRPC()))
		t.Cleanup(func() { _ = conn.Close() })
		wc, err := wake.Dial(ep)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = wc.Close() })
		reg := prometheus.NewRegistry()
		// Relist mode on any containerd: 2.x offers CRI events too.
		o := pleg.Options{Runtime: conn.Observer(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg,
			Evented: pleg.EventedOff, Wake: &wake.Source{Conn: wc}}
		if mod != nil {
			mod(&o)
		}
		p, err := pleg.New(o)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = p.Run(runCtx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		return p, reg
	}
	waitUp := func(t *testing.T, p *pleg.PLEG) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !p.WakeUp() {
			if time.Now().After(deadline) {
				t.Fatal("the containerd event stream never came up")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	t.Run("a killed container's death is published woken", func(t *testing.T) {
		const hour = time.Hour
		p, reg := newPLEG(t, func(o *pleg.Options) {
			o.RelistBudget = core.RelistBudget{Share: 0.01, Min: hour, Max: hour}
			o.WakePeriod = hour
		})
		sub := p.Subscribe(nil)
		defer sub.Close()
		waitUp(t, p)
		cl := map[string]string{crilabels.ContainerName: "victim", crilabels.ContainerType: crilabels.ContainerTypeRegular, crilabels.SpecHash: "h"}
		for k, v := range labels {
			cl[k] = v
		}
		id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "victim"}, Image: &runtimeapi.ImageSpec{Image: containerdtest.BusyboxImage()},
			Command: []string{"sleep", "3600"}, LogPath: "victim.log", Labels: cl,
			Annotations: map[string]string{crilabels.RestartCount: "0", crilabels.TerminationGracePeriod: "30"}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		next := func(want plegv1.PodLifecycleEventType) {
			t.Helper()
			for {
				ev, err := sub.Next(wctx)
				if err != nil {
					t.Fatalf("no %s for %s: %v", want, id, err)
				}
				if ev.GetType() == want && ev.GetContainerId() == id {
					return
				}
			}
		}
		next(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED)
		if err := rs.StopContainer(ctx, id, 0); err != nil { // SIGKILL at once
			t.Fatal(err)
		}
		next(plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED)
		if got := gathered(t, reg, "syncpod_pleg_wake_stream").GetGauge().GetValue(); got != 1 {
			t.Errorf("syncpod_pleg_wake_stream = %v, want 1", got)
		}
		if err := rs.RemoveContainer(ctx, id); err != nil {
			t.Error(err)
		}
	})

	t.Run("the defaults: a safety net of a second", func(t *testing.T) {
		p, reg := newPLEG(t, nil)
		waitUp(t, p)
		if got := gathered(t, reg, "syncpod_pleg_relist_period_seconds").GetGauge().GetValue(); got != 1 {
			t.Errorf("syncpod_pleg_relist_period_seconds = %v with the event stream up, want 1", got)
		}
	})
}
