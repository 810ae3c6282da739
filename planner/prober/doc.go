// Package prober runs a pod's liveness, readiness and startup probes with
// the kubelet's semantics and keeps their latest results, keyed by
// container id, for plan.Compute (liveness, startup) and the Ready
// condition (readiness).
//
// The kubelet's rules it keeps: before a probe has concluded, readiness is
// Failure, liveness Success and startup unknown; while a container has a
// startup probe that has not succeeded, its liveness and readiness probes
// do not run; a result changes only after success_threshold or
// failure_threshold consecutive equal outcomes; a probe that could not be
// run (an error, not a failed check) changes nothing; after a liveness or
// startup failure the worker holds until the container is replaced (a new
// container id); probes start once initial_delay_seconds have passed since
// the container started, then run every period_seconds, each bounded by
// timeout_seconds.
//
// Exec probes go through an Execer (CRI ExecSync, reached through the
// executor); tcp_socket, http_get and grpc probes are made from this
// process, to 127.0.0.1 for host-network pods and to the sandbox IP
// otherwise: tcp_socket and http_get through internal/handler, which the
// executor's lifecycle hooks share (a probe follows same-host redirects; a
// hook does not); grpc as the standard grpc.health.v1 Health/Check, where
// only SERVING is a success.
package prober
