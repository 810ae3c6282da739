// Package probe makes one attempt of a container probe as the kubelet's
// prober does: exec through an Execer (CRI ExecSync), tcpSocket and
// httpGet through package handler (an httpGet probe follows same-host
// redirects), grpc as grpc.health.v1 Health/Check, where only SERVING
// succeeds. It keeps no state: the planner's prober runs the
// probes of running pods with it, and the executor the probes of the
// sidecars a pod kill keeps running.
package probe
