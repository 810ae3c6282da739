// Package node makes a syncpod node a Kubernetes node: it is the kubelet's
// API-server side, on top of the planner.
//
// An Agent registers the Node object (capacity and allocatable read from
// the host, node info with the CRI runtime's name and version, addresses,
// conditions, the well-known labels), renews its Lease in kube-node-lease
// and refreshes the Node status on the kubelet's default periods. It
// watches the pods bound to the node (spec.nodeName) with an informer and
// turns each into a desired pod in the planner through its gRPC API, marked
// with the kubelet's source annotation (kubernetes.io/config.source=api).
// A pod with a deletionTimestamp is deleted in the planner with the pod's
// grace period; once the planner reports it gone, the API object is
// deleted with grace 0, as the kubelet does.
//
// Status flows back from the planner's WatchPods stream: each pod's newest
// status is kept per pod and written through the status subresource by a
// rate-limited work queue as a strategic-merge patch of what changed; a
// failed write is retried and a newer status replaces a pending one, so
// the newest status is never lost. Each status carries the pod's
// metadata.generation it is of as observedGeneration, on the status and its
// conditions: the pod goes to the planner with its generation, and a
// planner status computed for the spec the planner holds is of that
// generation. The planner's pod events become Events on the API
// server through client-go's event recorder.
//
// Restarting the agent is harmless: applying a pod the planner already
// holds is a no-op (same uid, same spec), so running pods are adopted, not
// restarted. Pods the planner holds from the api source that the API
// server no longer binds to the node are deleted in the planner.
//
// The kubelet's read API (NewReadAPI: /containerLogs, /exec, /attach,
// /portForward, /pods, /metrics/resource, /stats/summary, /healthz) is
// served on the agent's own TLS port, published in the Node's
// daemonEndpoints, so kubectl logs, exec and top work through the API
// server. It admits client certificates of one CA (the API server's
// --kubelet-client-certificate) and carries each request to the
// planner's ContainerLogs, Exec, Attach and PortForward streams, as
// syncpodctl does; the streaming protocols are k8s.io/cri-streaming's.
// The resource metrics and the Summary API (stats.go, R-33) join the
// planner's ListPodStats with the node's root cgroup (node/nodestats).
//
// ConfigMaps and Secrets referenced by the node's pods are mirrored into
// the planner from the API server (configs.go): one single-object watch
// per referenced object, the object applied before the pod that needs it,
// every change applied, and the agent's copy removed once no pod bound to
// the node references it.
//
// Service account tokens (tokens.go) are asked from the API server
// (TokenRequest, bound to the pod) for every projected serviceAccountToken
// source, the kube-api-access volume's included, cached and refreshed as
// the kubelet's token manager does, and handed to the planner as the
// pod's token Secret before the pod: never logged, never listed in clear,
// a refresh rewriting the file in place without touching the spec.
//
// Each pod handed to the planner carries its Service environment
// (services.go, package envvars): the kubelet's docker-links-style
// variables of the master Service and, with enableServiceLinks, of the
// Services of its namespace, from an informer on every Service with a
// cluster IP that has synced before any pod is handed over. They travel
// in the pod's service_environment, outside the spec, so a Service event
// re-applies the pods it concerns and the planner stores the new
// variables for the containers started afterwards, restarting none.
//
// The Node's MemoryPressure, DiskPressure and PIDPressure conditions are
// the planner's (GetNodeConditions): its eviction manager decides them from
// the same thresholds that evict, with their reasons and messages; under
// pressure new pods are refused as the kubelet's eviction admission
// refuses them (reason Evicted). A planner without the call reports no
// pressure; one that does not answer leaves the last known conditions.
//
// Only this package and its binary, syncpod-node, import client-go.
package node
