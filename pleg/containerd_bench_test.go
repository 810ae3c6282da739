package pleg_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	"github.com/syncpod/syncpod/cri/listcodec"
	"github.com/syncpod/syncpod/pleg"
	"github.com/syncpod/syncpod/pleg/wake"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
)

// BenchmarkPLEGRelistContainerd measures what a steady-state relist
// (nothing changed) costs on the test containerd, with 10 and 110 pods of
// one running container, listed as syncpod-pleg lists (cri.Conn with the
// list codec): the inputs of the adaptive relist period.
// Reported per relist: wall-ms (what the PLEG takes as its cost), cpu-ms
// (the benchmark process's user and system CPU, the PLEG's own work) and,
// when the containerd's pid file sits beside its socket, runtime-cpu-ms
// (containerd's CPU answering the two lists, read from /proc; clock ticks
// of 10 ms, so run enough iterations, e.g. -benchtime=500x). Skips (or
// fails, per the containerdtest contract) without a containerd.
func BenchmarkPLEGRelistContainerd(b *testing.B) {
	for _, pods := range []int{10, 110} {
		b.Run("pods="+strconv.Itoa(pods), func(b *testing.B) { benchRelistContainerd(b, pods) })
	}
}

func benchRelistContainerd(b *testing.B, pods int) {
	ep := containerdtest.Endpoint(b)
	rs := containerdtest.RuntimeService(b)
	ctx := b.Context()
	for i := range pods {
		cfg := containerdtest.HostNetworkSandboxConfig(b)
		uid := cfg.GetMetadata().GetUid()
		labels := map[string]string{crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid,
			crilabels.PodName: cfg.GetMetadata().GetName(), crilabels.PodNamespace: cfg.GetMetadata().GetNamespace()}
		for k, v := range labels {
			cfg.Labels[k] = v
		}
		sb := containerdtest.RunSandbox(b, rs, cfg)
		cl := map[string]string{crilabels.ContainerName: "app", crilabels.ContainerType: crilabels.ContainerTypeRegular, crilabels.SpecHash: "h"}
		for k, v := range labels {
			cl[k] = v
		}
		id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: containerdtest.BusyboxImage()},
			Command: []string{"sleep", "3600"}, LogPath: "app-" + strconv.Itoa(i) + ".log", Labels: cl,
			Annotations: map[string]string{crilabels.RestartCount: "0", crilabels.TerminationGracePeriod: "30"}}, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := rs.StartContainer(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	conn := cri.NewConn(ep, 30*time.Second, nil, cri.WithListCodec(listcodec.NewGRPC()))
	b.Cleanup(func() { _ = conn.Close() })
	p, err := pleg.New(pleg.Options{Runtime: conn.Observer(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registry: prometheus.NewRegistry(), Evented: pleg.EventedOff})
	if err != nil {
		b.Fatal(err)
	}
	if !p.Relist(ctx) { // the first relist inspects every pod
		b.Fatal("first relist failed")
	}
	if st, _, _ := p.ListPodStatuses(); len(st) != pods {
		b.Fatalf("%d pods cached, want %d", len(st), pods)
	}
	runtimeCPU := containerdCPU(ep)
	var wall, cpu time.Duration
	n := 0
	rt0 := runtimeCPU()
	for b.Loop() {
		c0, t0 := ownCPU(), time.Now()
		if !p.Relist(context.Background()) {
			b.Fatal("relist failed")
		}
		wall += time.Since(t0)
		cpu += ownCPU() - c0
		n++
	}
	rt := runtimeCPU() - rt0
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(n) }
	b.ReportMetric(ms(wall), "wall-ms")
	b.ReportMetric(ms(cpu), "cpu-ms")
	if rt >= 0 {
		b.ReportMetric(ms(rt), "runtime-cpu-ms")
	}
}

// BenchmarkPLEGDeathSeenContainerd measures how soon the PLEG, running
// at its defaults on the test containerd, publishes CONTAINER_DIED for a
// container that exits, beside 10 idle pods: each iteration starts a
// container of `sleep 0.2` in a pod of its own sandbox and waits for the
// event. In relist mode (containerd 1.6) wake=on is syncpod-pleg's
// default, relists woken by containerd's task events with a 1 s safety net
// wake=off relists at the adaptive period alone.
// Reported: seen-ms (the mean time from the exit, as the runtime dates it,
// to the event), seen-max-ms, period-ms (the relist period at the end)
// and relists/op. Skips (or fails) without a containerd as
// BenchmarkPLEGRelistContainerd.
func BenchmarkPLEGDeathSeenContainerd(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run("wake="+map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) { benchDeathSeen(b, on) })
	}
}

func benchDeathSeen(b *testing.B, wakeOn bool) {
	ep := containerdtest.Endpoint(b)
	rs := containerdtest.RuntimeService(b)
	ctx := b.Context()
	managed := func(cfg *runtimeapi.PodSandboxConfig) map[string]string {
		labels := map[string]string{crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: cfg.GetMetadata().GetUid(),
			crilabels.PodName: cfg.GetMetadata().GetName(), crilabels.PodNamespace: cfg.GetMetadata().GetNamespace()}
		for k, v := range labels {
			cfg.Labels[k] = v
		}
		return labels
	}
	start := func(sb string, cfg *runtimeapi.PodSandboxConfig, name string, cmd ...string) string {
		cl := map[string]string{crilabels.ContainerName: name, crilabels.ContainerType: crilabels.ContainerTypeRegular, crilabels.SpecHash: "h"}
		for k, v := range managed(cfg) {
			cl[k] = v
		}
		id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: containerdtest.BusyboxImage()},
			Command: cmd, LogPath: name + ".log", Labels: cl,
			Annotations: map[string]string{crilabels.RestartCount: "0", crilabels.TerminationGracePeriod: "30"}}, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := rs.StartContainer(ctx, id); err != nil {
			b.Fatal(err)
		}
		return id
	}
	for i := range 10 {
		cfg := containerdtest.HostNetworkSandboxConfig(b)
		managed(cfg)
		start(containerdtest.RunSandbox(b, rs, cfg), cfg, "idle-"+strconv.Itoa(i), "sleep", "3600")
	}
	cfg := containerdtest.HostNetworkSandboxConfig(b)
	managed(cfg)
	sb := containerdtest.RunSandbox(b, rs, cfg)

	conn := cri.NewConn(ep, 30*time.Second, nil, cri.WithListCodec(listcodec.NewGRPC()))
	b.Cleanup(func() { _ = conn.Close() })
	reg := prometheus.NewRegistry()
	opts := pleg.Options{Runtime: conn.Observer(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg}
	if wakeOn {
		wc, err := wake.Dial(ep)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = wc.Close() })
		opts.Wake = &wake.Source{Conn: wc}
	}
	p, err := pleg.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	sub := p.Subscribe(nil)
	defer sub.Close()
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(runCtx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })

	var sum, worst time.Duration
	n := 0
	relists0 := gatheredCount(b, reg, "syncpod_pleg_relist_interval_seconds")
	for b.Loop() {
		id := start(sb, cfg, "dies-"+strconv.Itoa(n), "sleep", "0.2")
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		for {
			ev, err := sub.Next(wctx)
			if err != nil {
				wcancel()
				b.Fatalf("no CONTAINER_DIED for %s: %v", id, err)
			}
			seen := time.Now()
			if ev.GetType() != plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED || ev.GetContainerId() != id {
				continue
			}
			var finished time.Time
			for _, c := range ev.GetObserved().GetContainers() {
				if c.GetId() == id {
					finished = c.GetFinishedAt().AsTime()
				}
			}
			if finished.IsZero() || finished.Unix() <= 0 {
				wcancel()
				b.Fatalf("CONTAINER_DIED for %s without its exit time", id)
			}
			lag := seen.Sub(finished)
			sum += lag
			worst = max(worst, lag)
			break
		}
		wcancel()
		if err := rs.RemoveContainer(ctx, id); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(sum.Seconds()*1000/float64(n), "seen-ms")
	b.ReportMetric(worst.Seconds()*1000, "seen-max-ms")
	b.ReportMetric(float64(gatheredCount(b, reg, "syncpod_pleg_relist_interval_seconds")-relists0)/float64(n), "relists/op")
	b.ReportMetric(gathered(b, reg, "syncpod_pleg_relist_period_seconds").GetGauge().GetValue()*1000, "period-ms")
}

// gathered is the first series of the metric name on reg; the test fails
// when reg has none.
func gathered(tb testing.TB, reg *prometheus.Registry, name string) *dto.Metric {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0]
		}
	}
	tb.Fatalf("no metric %s", name)
	return nil
}

// gatheredCount is the sample count of the histogram name on reg.
func gatheredCount(tb testing.TB, reg *prometheus.Registry, name string) uint64 {
	tb.Helper()
	return gathered(tb, reg, name).GetHistogram().GetSampleCount()
}

func ownCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// containerdCPU reads the CPU time of the containerd serving endpoint,
// found by the pid file beside its socket; -1 when there is none.
func containerdCPU(endpoint string) func() time.Duration {
	none := func() time.Duration { return -1 }
	dir := filepath.Dir(strings.TrimPrefix(endpoint, "unix://"))
	pid, err := os.ReadFile(filepath.Join(dir, "containerd.pid"))
	if err != nil {
		return none
	}
	stat := fmt.Sprintf("/proc/%s/stat", strings.TrimSpace(string(pid)))
	return func() time.Duration {
		raw, err := os.ReadFile(stat)
		if err != nil {
			return -1
		}
		// Fields after the command (which ends at the last ')'): state is
		// field 3, utime 14, stime 15, in clock ticks of 10 ms.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(f) < 13 {
			return -1
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		s, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return -1
		}
		return time.Duration(u+s) * 10 * time.Millisecond
	}
}
