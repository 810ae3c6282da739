// Package runtimeclient is the executor's access to the CRI runtime. It wraps the
// k8s.io/cri-api interfaces, reached through the shared lazy connection of
// the cri module (github.com/syncpod/syncpod/cri), in a decorator that
// gives every call a timeout derived from its ctx and records the
// kubelet's runtime-operation metrics (and, in a WithCallLog view, each
// call in a CallLog), and classifies runtime errors into sentinels
// (Classify) so the layers above never look at gRPC codes.
package runtimeclient
