// Package handler is the network half of the kubelet's container
// handlers, written once for the planner's probes (planner/prober) and the
// executor's lifecycle hooks (executor/runner): the GET of an httpGet
// action and the connect of a tcpSocket action.
//
// It takes plain values, not the API types, and decides nothing the
// callers differ on: the user agent, whether same-host redirects are
// followed (probes) or are themselves the answer (hooks), whether an
// HTTPS request answered in plain HTTP is retried over HTTP (hooks), and
// how much of the body is read are fields of HTTPGet. What they share is
// fixed here: the URL is the kubelet's (scheme, host:port, the path with
// "/" added and its query kept; a path url.Parse refuses is sent as a
// plain path), a Host header sets the request's host, certificates are
// not verified, keep-alives are off, and a status from 200 to 399 is a
// success (Succeeded).
package handler
