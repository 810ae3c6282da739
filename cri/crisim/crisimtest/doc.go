// Package crisimtest starts a crisim runtime inside a test, serving the
// real CRI gRPC API on a fresh unix socket, so executor, PLEG and crisim
// tests can use it as a real CRI endpoint through k8s.io/cri-client.
// Everything it starts is stopped, and every container process killed,
// by the test's cleanup.
package crisimtest
