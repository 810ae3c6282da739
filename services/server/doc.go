// Package server is the bootstrap every syncpod binary shares: common flags
// with SYNCPOD_* environment fallbacks, a slog logger, a gRPC server with
// reflection, grpc.health.v1, panic recovery, access logging and Prometheus
// metrics (go-grpc-middleware v2), a /metrics HTTP endpoint on its own
// address, graceful shutdown with a bounded drain, the `healthcheck`
// subcommand used by container healthchecks, access control (a unix socket
// in the runtime directory by default; TCP only with mutual TLS and the
// verb policy of authz.go, or plaintext under --insecure-tcp; an audit
// line for every mutating and exec-class call), and Serve, the end of every
// main: the server and the binary's Run(ctx) parts in one errgroup, turned
// into the exit status.
//
// It promises: listeners are opened by New, so a bad or busy address fails
// before anything runs; Run returns only after both servers have stopped;
// nothing is registered on a global Prometheus registry.
package server
