package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/syncpod/syncpod/internal/promreg"
	"github.com/syncpod/syncpod/node/nodestats"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// statsSnapshot is what /metrics/resource and /stats/summary report: the
// node's own use and its pods', read once per request.
type statsSnapshot struct {
	now     time.Time
	node    nodestats.Stats
	nodeErr error
	// pods are the pods with a running container, by their API names
	// (a static pod's is its mirror pod's).
	pods    []*syncpodv1.PodStats
	podsErr error
	// started is each API pod's status startTime, by namespace/name.
	started map[string]time.Time
}

// snapshot reads the node's use from its cgroups and the pods' from the
// planner's ListPodStats.
func (a *readAPI) snapshot(ctx context.Context) statsSnapshot {
	s := statsSnapshot{now: a.o.Now(), started: map[string]time.Time{}}
	s.node, s.nodeErr = a.o.NodeStats.Read(s.now)
	resp, err := a.o.Planner.ListPodStats(ctx, &plannerv1.ListPodStatsRequest{})
	s.podsErr = err
	for _, p := range resp.GetStats() {
		if len(p.GetContainers()) == 0 {
			continue
		}
		if a.o.MirrorName != nil {
			if mirror, ok := a.o.MirrorName(p.GetPodNamespace(), p.GetPodName()); ok {
				p.PodName = mirror
			}
		}
		s.pods = append(s.pods, p)
	}
	if a.o.Pods != nil {
		if pods, err := a.o.Pods(); err == nil {
			for _, p := range pods {
				if p.Status.StartTime != nil {
					s.started[p.Namespace+"/"+p.Name] = p.Status.StartTime.Time
				}
			}
		}
	}
	return s
}

// at is t, or the snapshot's time when the runtime gave none.
func (s *statsSnapshot) at(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return s.now
	}
	return t.AsTime()
}

// podTimes are the newest CPU and memory times of p's containers.
func (s *statsSnapshot) podTimes(p *syncpodv1.PodStats) (cpu, mem time.Time) {
	for _, c := range p.GetContainers() {
		if t := s.at(c.GetCpuTime()); t.After(cpu) {
			cpu = t
		}
		if t := s.at(c.GetMemoryTime()); t.After(mem) {
			mem = t
		}
	}
	return cpu, mem
}

// resourceDescs are the series of the kubelet's /metrics/resource, under
// its names and label names.
type resourceDescs struct {
	nodeCPU, nodeMemory, nodeSwap                 *prometheus.Desc
	containerStart, containerCPU, containerMemory *prometheus.Desc
	podCPU, podMemory                             *prometheus.Desc
	scrapeError                                   *prometheus.Desc
}

func newResourceDescs() resourceDescs {
	containerLabels, podLabels := []string{"container", "pod", "namespace"}, []string{"pod", "namespace"}
	return resourceDescs{
		nodeCPU:         prometheus.NewDesc("node_cpu_usage_seconds_total", "CPU time the node used, in core-seconds.", nil, nil),
		nodeMemory:      prometheus.NewDesc("node_memory_working_set_bytes", "Memory the node uses that cannot be reclaimed, in bytes.", nil, nil),
		nodeSwap:        prometheus.NewDesc("node_swap_usage_bytes", "Swap the node uses, in bytes.", nil, nil),
		containerStart:  prometheus.NewDesc("container_start_time_seconds", "When the runtime created the container, in seconds since the epoch.", containerLabels, nil),
		containerCPU:    prometheus.NewDesc("container_cpu_usage_seconds_total", "CPU time the container used, in core-seconds.", containerLabels, nil),
		containerMemory: prometheus.NewDesc("container_memory_working_set_bytes", "Memory the container uses that cannot be reclaimed, in bytes.", containerLabels, nil),
		podCPU:          prometheus.NewDesc("pod_cpu_usage_seconds_total", "CPU time the pod's containers used, in core-seconds.", podLabels, nil),
		podMemory:       prometheus.NewDesc("pod_memory_working_set_bytes", "Memory the pod's containers use that cannot be reclaimed, in bytes.", podLabels, nil),
		scrapeError:     prometheus.NewDesc("resource_scrape_error", "1 when the node's or its pods' use could not be read in full, else 0.", nil, nil),
	}
}

// resourceCollector turns one snapshot into the resource metrics
// the CPU and memory series carry the time the figures were
// taken, as the kubelet's do, for the rates metrics-server computes.
type resourceCollector struct {
	d resourceDescs
	s statsSnapshot
}

// Describe sends every series' description.
func (c resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.d.nodeCPU, c.d.nodeMemory, c.d.nodeSwap, c.d.containerStart, c.d.containerCPU,
		c.d.containerMemory, c.d.podCPU, c.d.podMemory, c.d.scrapeError} {
		ch <- d
	}
}

// Collect sends the snapshot's series.
func (c resourceCollector) Collect(ch chan<- prometheus.Metric) {
	s, d := &c.s, c.d
	stamped := func(t time.Time, desc *prometheus.Desc, typ prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.NewMetricWithTimestamp(t, prometheus.MustNewConstMetric(desc, typ, v, labels...))
	}
	if s.nodeErr == nil {
		stamped(s.node.Time, d.nodeCPU, prometheus.CounterValue, seconds(s.node.CPUUsageCoreNanoseconds))
		stamped(s.node.Time, d.nodeMemory, prometheus.GaugeValue, float64(s.node.MemoryWorkingSetBytes))
		if s.node.SwapUsageBytes != nil {
			stamped(s.node.Time, d.nodeSwap, prometheus.GaugeValue, float64(*s.node.SwapUsageBytes))
		}
	}
	for _, p := range s.pods {
		name, ns := p.GetPodName(), p.GetPodNamespace()
		for _, ctr := range p.GetContainers() {
			if st := ctr.GetStartTime(); st != nil && st.AsTime().Unix() > 0 {
				ch <- prometheus.MustNewConstMetric(d.containerStart, prometheus.GaugeValue, float64(st.AsTime().UnixNano())/1e9, ctr.GetName(), name, ns)
			}
			stamped(s.at(ctr.GetCpuTime()), d.containerCPU, prometheus.CounterValue, seconds(ctr.GetCpuUsageCoreNanoseconds()), ctr.GetName(), name, ns)
			stamped(s.at(ctr.GetMemoryTime()), d.containerMemory, prometheus.GaugeValue, float64(ctr.GetMemoryWorkingSetBytes()), ctr.GetName(), name, ns)
		}
		cpuAt, memAt := s.podTimes(p)
		stamped(cpuAt, d.podCPU, prometheus.CounterValue, seconds(p.GetCpuUsageCoreNanoseconds()), name, ns)
		stamped(memAt, d.podMemory, prometheus.GaugeValue, float64(p.GetMemoryWorkingSetBytes()), name, ns)
	}
	failed := 0.0
	if s.nodeErr != nil || s.podsErr != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(d.scrapeError, prometheus.GaugeValue, failed)
}

func seconds(ns uint64) float64 { return float64(ns) / float64(time.Second) }

// logStatsErrors logs what a snapshot could not read.
func (a *readAPI) logStatsErrors(s statsSnapshot, path string) {
	if s.nodeErr != nil {
		a.o.Logger.Warn("cannot read the node's resource use", "path", path, "err", s.nodeErr)
	}
	if s.podsErr != nil {
		a.o.Logger.Warn("cannot read the pods' resource use from the planner", "path", path, "err", s.podsErr)
	}
}

// serveResourceMetrics is the kubelet's /metrics/resource: the node's,
// pods' and containers' CPU and memory in the Prometheus text format,
// from a registry made for the one scrape.
func (a *readAPI) serveResourceMetrics(w http.ResponseWriter, r *http.Request) {
	s := a.snapshot(r.Context())
	a.logStatsErrors(s, r.URL.Path)
	reg := prometheus.NewRegistry()
	if err := promreg.Register(reg, resourceCollector{d: a.descs, s: s}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// serveSummary is the kubelet's /stats/summary: the Summary
// API's JSON (k8s.io/kubelet's stats/v1alpha1 types) with the node's
// CPU, memory, swap and filesystem and each running pod's and
// container's CPU and memory, writable layer and processes;
// only_cpu_and_memory=true leaves out the rest, as the kubelet does. A
// node that cannot be read is a 500, a planner error the read API's
// status for it (503 while the planner is unavailable).
func (a *readAPI) serveSummary(w http.ResponseWriter, r *http.Request) {
	only := false
	if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
		var err error
		if only, err = strconv.ParseBool(v); err != nil {
			http.Error(w, fmt.Sprintf("only_cpu_and_memory: want true or false, got %q", v), http.StatusBadRequest)
			return
		}
	}
	s := a.snapshot(r.Context())
	a.logStatsErrors(s, r.URL.Path)
	switch {
	case s.podsErr != nil:
		writeErr(w, s.podsErr)
		return
	case s.nodeErr != nil:
		http.Error(w, "cannot read the node's resource use: "+s.nodeErr.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(summary(&s, a.o.NodeName, only))
}

// summary is the Summary API's view of s.
func summary(s *statsSnapshot, nodeName string, onlyCPUAndMemory bool) statsapi.Summary {
	n := s.node
	node := statsapi.NodeStats{
		NodeName: nodeName,
		CPU: &statsapi.CPUStats{Time: metav1.NewTime(n.Time), UsageNanoCores: n.CPUUsageNanoCores,
			UsageCoreNanoSeconds: ptr.To(n.CPUUsageCoreNanoseconds)},
		Memory: &statsapi.MemoryStats{Time: metav1.NewTime(n.Time), AvailableBytes: n.MemoryAvailableBytes,
			UsageBytes: ptr.To(n.MemoryUsageBytes), WorkingSetBytes: ptr.To(n.MemoryWorkingSetBytes), RSSBytes: ptr.To(n.MemoryRSSBytes),
			PageFaults: ptr.To(n.PageFaults), MajorPageFaults: ptr.To(n.MajorPageFaults)},
	}
	if !onlyCPUAndMemory {
		if n.SwapUsageBytes != nil {
			node.Swap = &statsapi.SwapStats{Time: metav1.NewTime(n.Time), SwapUsageBytes: n.SwapUsageBytes}
		}
		if fs := n.Fs; fs != nil {
			node.Fs = &statsapi.FsStats{Time: metav1.NewTime(n.Time), AvailableBytes: ptr.To(fs.AvailableBytes),
				CapacityBytes: ptr.To(fs.CapacityBytes), UsedBytes: ptr.To(fs.UsedBytes),
				InodesFree: ptr.To(fs.InodesFree), Inodes: ptr.To(fs.Inodes), InodesUsed: ptr.To(fs.InodesUsed)}
		}
	}
	out := statsapi.Summary{Node: node, Pods: []statsapi.PodStats{}}
	for _, p := range s.pods {
		cpuAt, memAt := s.podTimes(p)
		ps := statsapi.PodStats{
			PodRef:    statsapi.PodReference{Name: p.GetPodName(), Namespace: p.GetPodNamespace(), UID: p.GetPodUid()},
			StartTime: metav1.NewTime(s.started[p.GetPodNamespace()+"/"+p.GetPodName()]),
			CPU: &statsapi.CPUStats{Time: metav1.NewTime(cpuAt), UsageNanoCores: ptr.To(p.GetCpuNanoCores()),
				UsageCoreNanoSeconds: ptr.To(p.GetCpuUsageCoreNanoseconds())},
			Memory: &statsapi.MemoryStats{Time: metav1.NewTime(memAt), WorkingSetBytes: ptr.To(p.GetMemoryWorkingSetBytes())},
		}
		var usage, rss uint64
		for _, c := range p.GetContainers() {
			usage += c.GetMemoryUsageBytes()
			rss += c.GetMemoryRssBytes()
			cs := statsapi.ContainerStats{
				Name: c.GetName(),
				CPU: &statsapi.CPUStats{Time: metav1.NewTime(s.at(c.GetCpuTime())), UsageNanoCores: ptr.To(c.GetCpuNanoCores()),
					UsageCoreNanoSeconds: ptr.To(c.GetCpuUsageCoreNanoseconds())},
				Memory: &statsapi.MemoryStats{Time: metav1.NewTime(s.at(c.GetMemoryTime())), UsageBytes: ptr.To(c.GetMemoryUsageBytes()),
					WorkingSetBytes: ptr.To(c.GetMemoryWorkingSetBytes()), RSSBytes: ptr.To(c.GetMemoryRssBytes())},
			}
			if c.GetStartTime() != nil {
				cs.StartTime = metav1.NewTime(c.GetStartTime().AsTime())
			}
			if !onlyCPUAndMemory {
				cs.Rootfs = &statsapi.FsStats{Time: metav1.NewTime(s.now), UsedBytes: ptr.To(c.GetWritableLayerBytes()),
					InodesUsed: ptr.To(c.GetWritableLayerInodes())}
			}
			ps.Containers = append(ps.Containers, cs)
		}
		ps.Memory.UsageBytes, ps.Memory.RSSBytes = &usage, &rss
		if !onlyCPUAndMemory && p.GetProcessCount() > 0 {
			ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: ptr.To(p.GetProcessCount())}
		}
		out.Pods = append(out.Pods, ps)
	}
	return out
}
