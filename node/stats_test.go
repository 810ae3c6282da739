package node

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/syncpod/syncpod/node/nodestats"
	"github.com/syncpod/syncpod/node/nodestats/nodestatstest"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

var (
	statsNow     = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	webStarted   = time.Date(2026, 1, 2, 3, 0, 0, 250_000_000, time.UTC)
	webCPUAt     = time.Date(2026, 1, 2, 3, 4, 1, 0, time.UTC)
	webMemoryAt  = time.Date(2026, 1, 2, 3, 4, 2, 0, time.UTC)
	etcdStarted  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	webPodStart  = time.Date(2026, 1, 2, 2, 59, 59, 0, time.UTC)
	cgroupV2Tree = map[string]string{
		"cgroup.controllers": "cpu memory\n",
		"cpu.stat":           "usage_usec 3000000\n",
		"memory.stat":        "anon 400000\nfile 500000\ninactive_file 100000\n",
		"meminfo":            "MemTotal: 1000 kB\nSwapTotal: 200 kB\nSwapFree: 150 kB\n",
	}
	cgroupV1Tree = map[string]string{
		"cpu,cpuacct/cpuacct.usage":          "3000000000\n",
		"memory/memory.usage_in_bytes":       "900000\n",
		"memory/memory.memsw.usage_in_bytes": "951200\n",
		"memory/memory.stat":                 "total_rss 400000\ntotal_inactive_file 100000\n",
		"meminfo":                            "MemTotal: 1000 kB\n",
	}
)

// statsPlanner is the fake read planner with the stats of default/web
// (containers app, with every time, and sidecar, with none), static pod
// kube-system/etcd, and default/idle, which runs nothing.
func statsPlanner() fakeReadPlanner {
	f := newReadPlanner()
	f.SetPodStats(
		&syncpodv1.PodStats{PodUid: "uid-web", PodName: "web", PodNamespace: "default", CpuNanoCores: 30_000_000, CpuUsageCoreNanoseconds: 3_500_000_000,
			MemoryWorkingSetBytes: 3000, ProcessCount: 4, WritableLayerBytes: 8192,
			Containers: []*syncpodv1.ContainerStats{
				{Name: "app", ContainerId: "c1", CpuNanoCores: 20_000_000, CpuUsageCoreNanoseconds: 2_500_000_000, MemoryWorkingSetBytes: 2000,
					MemoryRssBytes: 1500, MemoryUsageBytes: 2600, WritableLayerBytes: 8192, WritableLayerInodes: 5,
					StartTime: timestamppb.New(webStarted), CpuTime: timestamppb.New(webCPUAt), MemoryTime: timestamppb.New(webMemoryAt)},
				{Name: "sidecar", ContainerId: "c2", CpuNanoCores: 10_000_000, CpuUsageCoreNanoseconds: 1_000_000_000, MemoryWorkingSetBytes: 1000},
			}},
		&syncpodv1.PodStats{PodUid: "uid-etcd", PodName: "etcd", PodNamespace: "kube-system", CpuUsageCoreNanoseconds: 7_000_000_000, MemoryWorkingSetBytes: 50,
			Containers: []*syncpodv1.ContainerStats{{Name: "etcd", CpuUsageCoreNanoseconds: 7_000_000_000, MemoryWorkingSetBytes: 50,
				StartTime: timestamppb.New(etcdStarted)}}},
		&syncpodv1.PodStats{PodUid: "uid-idle", PodName: "idle", PodNamespace: "default"},
	)
	return f
}

// statsServer serves the read API of f, the node's cgroups read from a
// tree of files, to an authenticated user.
func statsServer(t *testing.T, f fakeReadPlanner, cgroups map[string]string, fsDir string) *httptest.Server {
	t.Helper()
	root := nodestatstest.Tree(t, cgroups)
	h, err := NewReadAPI(ReadAPIOptions{
		Planner: plannerClient(t, f),
		Pods: func() ([]*corev1.Pod, error) {
			return []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
				Status: corev1.PodStatus{StartTime: &metav1.Time{Time: webPodStart}}}}, nil
		},
		MirrorName: func(ns, name string) (string, bool) {
			if ns == "kube-system" && name == "etcd" {
				return "etcd-node1", true
			}
			return "", false
		},
		NodeName:  "node1",
		NodeStats: &nodestats.Reader{CgroupRoot: root, Meminfo: filepath.Join(root, "meminfo"), FsDir: fsDir},
		Logger:    slog.New(slog.DiscardHandler),
		Now:       func() time.Time { return statsNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client"}}}}}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// scrape parses /metrics/resource with Prometheus' text parser.
func scrape(t *testing.T, srv *httptest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(srv.URL + "/metrics/resource")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics/resource: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics/resource: %v", err)
	}
	return fams
}

// sample is one series as the test expects it: its value and its
// timestamp (zero: none).
type sample struct {
	value float64
	at    time.Time
}

// series finds the series of name with labels (name=value pairs).
func series(fams map[string]*dto.MetricFamily, name string, labels ...string) (sample, bool) {
	fam := fams[name]
	for _, m := range fam.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels)/2 {
			continue
		}
		match := true
		for i := 0; i < len(labels); i += 2 {
			match = match && got[labels[i]] == labels[i+1]
		}
		if !match {
			continue
		}
		s := sample{}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			s.value = m.GetCounter().GetValue()
		default:
			s.value = m.GetGauge().GetValue()
		}
		if m.TimestampMs != nil {
			s.at = time.UnixMilli(m.GetTimestampMs()).UTC()
		}
		return s, true
	}
	return sample{}, false
}

// the kubelet's series, label names, types and timestamps, on
// either cgroup version.
func TestResourceMetricsAreTheKubeletsSeries(t *testing.T) {
	web, etcd := []string{"pod", "web", "namespace", "default"}, []string{"pod", "etcd-node1", "namespace", "kube-system"}
	ctr := func(name string, pod []string) []string { return append([]string{"container", name}, pod...) }
	want := []struct {
		name   string
		labels []string
		sample
	}{
		{"node_cpu_usage_seconds_total", nil, sample{3, statsNow}},
		{"node_memory_working_set_bytes", nil, sample{800000, statsNow}},
		{"node_swap_usage_bytes", nil, sample{51200, statsNow}},
		{"container_cpu_usage_seconds_total", ctr("app", web), sample{2.5, webCPUAt}},
		{"container_memory_working_set_bytes", ctr("app", web), sample{2000, webMemoryAt}},
		{"container_start_time_seconds", ctr("app", web), sample{float64(webStarted.UnixNano()) / 1e9, time.Time{}}},
		// The runtime gave no times: the scrape's.
		{"container_cpu_usage_seconds_total", ctr("sidecar", web), sample{1, statsNow}},
		{"container_memory_working_set_bytes", ctr("sidecar", web), sample{1000, statsNow}},
		// A pod's time is its newest container's.
		{"pod_cpu_usage_seconds_total", web, sample{3.5, statsNow}},
		{"pod_memory_working_set_bytes", web, sample{3000, statsNow}},
		// A static pod is named as its mirror pod.
		{"container_start_time_seconds", ctr("etcd", etcd), sample{float64(etcdStarted.Unix()), time.Time{}}},
		{"pod_cpu_usage_seconds_total", etcd, sample{7, statsNow}},
		{"resource_scrape_error", nil, sample{0, time.Time{}}},
	}
	for _, tree := range []struct {
		name  string
		files map[string]string
	}{{"cgroup v2", cgroupV2Tree}, {"cgroup v1", cgroupV1Tree}} {
		t.Run(tree.name, func(t *testing.T) {
			fams := scrape(t, statsServer(t, statsPlanner(), tree.files, ""))
			for _, w := range want {
				got, ok := series(fams, w.name, w.labels...)
				if !ok {
					t.Errorf("%s%v: missing", w.name, w.labels)
					continue
				}
				if math.Abs(got.value-w.value) > 1e-6 || !got.at.Equal(w.at) {
					t.Errorf("%s%v = %v at %v, want %v at %v", w.name, w.labels, got.value, got.at, w.value, w.at)
				}
			}
			if _, ok := series(fams, "container_start_time_seconds", ctr("sidecar", web)...); ok {
				t.Error("container_start_time_seconds of a container without a start time: want none")
			}
			if _, ok := series(fams, "pod_cpu_usage_seconds_total", "pod", "idle", "namespace", "default"); ok {
				t.Error("a pod that runs nothing has series: want none")
			}
			for name, typ := range map[string]dto.MetricType{"node_cpu_usage_seconds_total": dto.MetricType_COUNTER,
				"container_cpu_usage_seconds_total": dto.MetricType_COUNTER, "pod_cpu_usage_seconds_total": dto.MetricType_COUNTER,
				"container_memory_working_set_bytes": dto.MetricType_GAUGE, "resource_scrape_error": dto.MetricType_GAUGE} {
				if got := fams[name].GetType(); got != typ {
					t.Errorf("%s is a %v, want a %v", name, got, typ)
				}
			}
		})
	}
}

// what cannot be read sets resource_scrape_error; the rest is
// served.
func TestResourceMetricsReportWhatTheyCannotRead(t *testing.T) {
	t.Run("planner down: the node's series and the error", func(t *testing.T) {
		f := statsPlanner()
		f.SetPodStatsError(status.Error(codes.Unavailable, "executor not connected"))
		fams := scrape(t, statsServer(t, f, cgroupV2Tree, ""))
		if got, _ := series(fams, "resource_scrape_error"); got.value != 1 {
			t.Errorf("resource_scrape_error = %v, want 1", got.value)
		}
		if _, ok := series(fams, "node_cpu_usage_seconds_total"); !ok {
			t.Error("node_cpu_usage_seconds_total missing")
		}
		if fams["container_cpu_usage_seconds_total"] != nil {
			t.Error("container series without the planner's stats")
		}
	})
	t.Run("no cgroups: the pods' series and the error", func(t *testing.T) {
		fams := scrape(t, statsServer(t, statsPlanner(), map[string]string{"meminfo": ""}, ""))
		if got, _ := series(fams, "resource_scrape_error"); got.value != 1 {
			t.Errorf("resource_scrape_error = %v, want 1", got.value)
		}
		if fams["node_cpu_usage_seconds_total"] != nil {
			t.Error("node series without cgroups")
		}
		if _, ok := series(fams, "container_cpu_usage_seconds_total", "container", "app", "pod", "web", "namespace", "default"); !ok {
			t.Error("container_cpu_usage_seconds_total of web/app missing")
		}
	})
}

func getSummary(t *testing.T, srv *httptest.Server, query string) statsapi.Summary {
	t.Helper()
	code, body := get(t, srv.URL+"/stats/summary"+query)
	if code != http.StatusOK {
		t.Fatalf("/stats/summary%s: %d %s", query, code, body)
	}
	var s statsapi.Summary
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("/stats/summary: %v\n%s", err, body)
	}
	return s
}

// the Summary API's node, pods and containers.
func TestStatsSummary(t *testing.T) {
	srv := statsServer(t, statsPlanner(), cgroupV2Tree, t.TempDir())
	s := getSummary(t, srv, "")
	n := s.Node
	if n.NodeName != "node1" || *n.CPU.UsageCoreNanoSeconds != 3e9 || !n.CPU.Time.Equal(&metav1.Time{Time: statsNow}) ||
		*n.Memory.WorkingSetBytes != 800000 || *n.Memory.UsageBytes != 900000 || *n.Memory.AvailableBytes != 1000*1024-800000 ||
		*n.Swap.SwapUsageBytes != 51200 || n.Fs == nil || *n.Fs.CapacityBytes == 0 {
		t.Errorf("node: %+v", n)
	}
	if len(s.Pods) != 2 {
		t.Fatalf("pods: %+v, want web and etcd-node1 (idle runs nothing)", s.Pods)
	}
	web, etcd := s.Pods[0], s.Pods[1]
	if web.PodRef != (statsapi.PodReference{Name: "web", Namespace: "default", UID: "uid-web"}) || !web.StartTime.Time.Equal(webPodStart) ||
		*web.CPU.UsageNanoCores != 30_000_000 || *web.CPU.UsageCoreNanoSeconds != 3_500_000_000 || *web.Memory.WorkingSetBytes != 3000 ||
		*web.Memory.UsageBytes != 2600 || *web.Memory.RSSBytes != 1500 || *web.ProcessStats.ProcessCount != 4 {
		t.Errorf("web: %+v", web)
	}
	if len(web.Containers) != 2 {
		t.Fatalf("web's containers: %+v", web.Containers)
	}
	app, sidecar := web.Containers[0], web.Containers[1]
	if app.Name != "app" || !app.StartTime.Time.Equal(webStarted.Truncate(time.Second)) || // JSON times are in seconds

		*app.CPU.UsageCoreNanoSeconds != 2_500_000_000 || *app.CPU.UsageNanoCores != 20_000_000 || !app.CPU.Time.Time.Equal(webCPUAt) ||
		*app.Memory.WorkingSetBytes != 2000 || *app.Memory.RSSBytes != 1500 || !app.Memory.Time.Time.Equal(webMemoryAt) ||
		*app.Rootfs.UsedBytes != 8192 || *app.Rootfs.InodesUsed != 5 {
		t.Errorf("web/app: %+v", app)
	}
	if sidecar.Name != "sidecar" || !sidecar.StartTime.IsZero() || !sidecar.CPU.Time.Time.Equal(statsNow) {
		t.Errorf("web/sidecar: %+v", sidecar)
	}
	if etcd.PodRef.Name != "etcd-node1" || etcd.PodRef.UID != "uid-etcd" || !etcd.StartTime.IsZero() {
		t.Errorf("static pod: %+v", etcd.PodRef)
	}

	only := getSummary(t, srv, "?only_cpu_and_memory=true")
	if only.Node.Fs != nil || only.Node.Swap != nil || only.Pods[0].Containers[0].Rootfs != nil || only.Pods[0].ProcessStats != nil ||
		only.Node.CPU == nil || only.Pods[0].Containers[0].Memory == nil {
		t.Errorf("only_cpu_and_memory: %+v", only)
	}
}

func TestStatsSummaryErrors(t *testing.T) {
	f := statsPlanner()
	srv := statsServer(t, f, cgroupV2Tree, "")
	if code, body := get(t, srv.URL+"/stats/summary?only_cpu_and_memory=maybe"); code != http.StatusBadRequest || !strings.Contains(body, "only_cpu_and_memory") {
		t.Errorf("bad only_cpu_and_memory: %d %q, want 400 naming it", code, body)
	}
	f.SetPodStatsError(status.Error(codes.Unavailable, "executor not connected"))
	if code, body := get(t, srv.URL+"/stats/summary"); code != http.StatusServiceUnavailable || !strings.Contains(body, "executor not connected") {
		t.Errorf("planner down: %d %q, want 503 with its reason", code, body)
	}
	f.SetPodStats()
	noCgroups := statsServer(t, f, map[string]string{"meminfo": ""}, "")
	if code, body := get(t, noCgroups.URL+"/stats/summary"); code != http.StatusInternalServerError || !strings.Contains(body, "node's resource use") {
		t.Errorf("no cgroups: %d %q, want 500", code, body)
	}
}
