package runner

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/internal/promreg"
)

// Container type label values (the kubelet's).
const (
	typeContainer = "container"
	typeInit      = "init_container"
	typeEphemeral = "ephemeral_container"
)

// Metrics are the runner's counters, named after the kubelet's under
// syncpod_executor_.
type Metrics struct {
	startedPods       prometheus.Counter
	startedPodsErrors prometheus.Counter
	startedCtrs       *prometheus.CounterVec
	startedCtrsErrors *prometheus.CounterVec
	imagePulls        *prometheus.CounterVec
	imagePullDuration prometheus.Histogram
	// The kubelet's image volume counters.
	imageVolumesRequested   prometheus.Counter
	imageVolumeMountsOK     prometheus.Counter
	imageVolumeMountsFailed prometheus.Counter
}

// NewMetrics creates the runner's metrics and registers them on reg
// (nil: not registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	o := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "syncpod", Subsystem: "executor", Name: name, Help: help}
	}
	m := &Metrics{
		startedPods:             prometheus.NewCounter(o("started_pods_total", "Pod sandboxes the executor tried to create.")),
		startedPodsErrors:       prometheus.NewCounter(o("started_pods_errors_total", "Pod sandbox creations that failed.")),
		startedCtrs:             prometheus.NewCounterVec(o("started_containers_total", "Containers the executor tried to start, by container type."), []string{"container_type"}),
		startedCtrsErrors:       prometheus.NewCounterVec(o("started_containers_errors_total", "Container starts that failed, by container type and error code."), []string{"container_type", "code"}),
		imagePulls:              prometheus.NewCounterVec(o("image_pulls_total", "Image pulls by result (success, failure)."), []string{"result"}),
		imageVolumesRequested:   prometheus.NewCounter(o("image_volume_requested_total", "Image volumes the containers started mount (per start, each volume once).")),
		imageVolumeMountsOK:     prometheus.NewCounter(o("image_volume_mounted_succeed_total", "Mounts of image volumes in container starts the runtime did not refuse as ImageVolumeMountFailed.")),
		imageVolumeMountsFailed: prometheus.NewCounter(o("image_volume_mounted_errors_total", "Mounts of image volumes in container creations the runtime refused with a message starting ImageVolumeMountFailed.")),
		imagePullDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "syncpod", Subsystem: "executor", Name: "image_pull_duration_seconds",
			Help:    "Duration of image pulls.",
			Buckets: []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
		}),
	}
	if err := promreg.Register(reg, m.startedPods, m.startedPodsErrors, m.startedCtrs, m.startedCtrsErrors, m.imagePulls, m.imagePullDuration,
		m.imageVolumesRequested, m.imageVolumeMountsOK, m.imageVolumeMountsFailed); err != nil {
		return nil, err
	}
	return m, nil
}
