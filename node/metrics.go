package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/internal/promreg"
)

// metrics are the agent's Prometheus metrics.
type metrics struct {
	podSyncs      *prometheus.CounterVec
	statusWrites  *prometheus.CounterVec
	leaseRenewals *prometheus.CounterVec
	nodeStatus    *prometheus.CounterVec
	events        prometheus.Counter
	// ConfigMaps and Secrets mirrored into the planner.
	configWatches  prometheus.Gauge
	configApplies  *prometheus.CounterVec
	configRemovals *prometheus.CounterVec
	// tokenHandovers counts token Secrets created or changed.
	tokenHandovers prometheus.Counter
}

// newMetrics creates the agent's metrics and registers them on reg (nil:
// not registered).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		podSyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_node_pod_syncs_total",
			Help: "API pods carried into the planner, by result (applied, deleted, refused, error).",
		}, []string{"result"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_node_status_writes_total",
			Help: "Pod status writes through the status subresource, by result (patched, unchanged, error).",
		}, []string{"result"}),
		leaseRenewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_node_lease_renewals_total",
			Help: "Node lease renewals, by result (ok, error).",
		}, []string{"result"}),
		nodeStatus: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_node_status_updates_total",
			Help: "Node status updates, by result (ok, error).",
		}, []string{"result"}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_node_events_recorded_total",
			Help: "Pod events handed to the API server's event recorder.",
		}),
		configWatches: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "syncpod_node_config_watches",
			Help: "ConfigMaps and Secrets referenced by the node's pods and watched on the API server.",
		}),
		configApplies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_node_config_applies_total",
			Help: "ConfigMaps and Secrets from the API server created or changed in the planner, by kind.",
		}, []string{"kind"}),
		configRemovals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_node_config_removals_total",
			Help: "ConfigMaps and Secrets removed from the planner (deleted on the API server or referenced by no pod), by kind.",
		}, []string{"kind"}),
		tokenHandovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_node_token_handovers_total",
			Help: "Service account tokens issued by the API server and handed to the planner (a pod's token Secret created or changed).",
		}),
	}
	if err := promreg.Register(reg, m.podSyncs, m.statusWrites, m.leaseRenewals, m.nodeStatus, m.events,
		m.configWatches, m.configApplies, m.configRemovals, m.tokenHandovers); err != nil {
		return nil, err
	}
	return m, nil
}
