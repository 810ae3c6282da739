// Package cri connects the PLEG to a real CRI runtime through the
// kubelet's own remote client (k8s.io/cri-client), so the PLEG talks to
// containerd or CRI-O exactly as the kubelet does.
package cri
