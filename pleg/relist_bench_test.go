package pleg_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	"github.com/syncpod/syncpod/cri/listcodec"
	"github.com/syncpod/syncpod/pleg"
)

// BenchmarkPLEGRelist2000 measures a steady-state PLEG relist (nothing
// changed) against crisim in simulated mode over its unix socket, with
// 1,000 pods of two containers labelled as the executor labels them:
// the relist the many-pods rows of make bench time on a loaded machine
// (goal: p99 < 100 ms at 2,000 containers). The PLEG lists through a
// cri.Conn with the list codec, as syncpod-pleg wires it. Its baseline
// runs in the same loop: every iteration also makes the relist's two list
// calls alone (ListPodSandbox and ListContainers with the PLEG's label
// selector, on the same connection), the two alternating in order, so a load that
// changes over the run weighs on both alike. Reported: relist-ms and
// lists-ms (mean per call), relist/lists (their ratio: 1 is a relist that
// costs nothing beyond its two RPCs) and pleg-own-ms (the difference).
// ns/op covers both.
func BenchmarkPLEGRelist2000(b *testing.B) {
	ep, _ := crisimtest.Start(b, crisim.Options{Mode: crisim.ModeSimulated})
	rs, is := crisimtest.Clients(b, ep)
	ctx := context.Background()
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}, nil, nil); err != nil {
		b.Fatal(err)
	}
	for p := range 1000 {
		uid := "uid-" + strconv.Itoa(p)
		labels := map[string]string{crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid,
			crilabels.PodName: "pod-" + strconv.Itoa(p), crilabels.PodNamespace: "default"}
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-" + strconv.Itoa(p), Namespace: "default", Uid: uid}, Labels: labels}
		sb, err := rs.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range []string{"app", "side"} {
			cl := map[string]string{crilabels.ContainerName: name, crilabels.ContainerType: crilabels.ContainerTypeRegular, crilabels.SpecHash: "h"}
			for k, v := range labels {
				cl[k] = v
			}
			id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "img"}, Labels: cl,
				Annotations: map[string]string{crilabels.RestartCount: "0", crilabels.TerminationGracePeriod: "30"}}, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if err := rs.StartContainer(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	}
	conn := cri.NewConn(ep, 30*time.Second, nil, cri.WithListCodec(listcodec.NewGRPC()))
	b.Cleanup(func() { _ = conn.Close() })
	obs := conn.Observer()
	p, err := pleg.New(pleg.Options{Runtime: obs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registry: prometheus.NewRegistry(), Evented: pleg.EventedOff})
	if err != nil {
		b.Fatal(err)
	}
	if !p.Relist(ctx) { // the first relist inspects every pod
		b.Fatal("first relist failed")
	}
	lists := func() {
		if _, err := obs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: crilabels.ManagedSelector()}); err != nil {
			b.Fatal(err)
		}
		if _, err := obs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: crilabels.ManagedSelector()}); err != nil {
			b.Fatal(err)
		}
	}
	relist := func() {
		if !p.Relist(ctx) {
			b.Fatal("relist failed")
		}
	}
	var listsT, relistT time.Duration
	timed := func(fn func(), into *time.Duration) {
		t0 := time.Now()
		fn()
		*into += time.Since(t0)
	}
	n := 0
	for b.Loop() {
		if n%2 == 0 {
			timed(lists, &listsT)
			timed(relist, &relistT)
		} else {
			timed(relist, &relistT)
			timed(lists, &listsT)
		}
		n++
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(n) }
	b.ReportMetric(ms(relistT), "relist-ms")
	b.ReportMetric(ms(listsT), "lists-ms")
	b.ReportMetric(relistT.Seconds()/listsT.Seconds(), "relist/lists")
	b.ReportMetric(ms(relistT-listsT), "pleg-own-ms")
}
