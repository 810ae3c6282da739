// Package kubeconv converts between Kubernetes v1 Pods and syncpod's pods,
// in both directions, for every part of syncpod that speaks Kubernetes:
// syncpodctl (apply -f of a manifest, get -o yaml) and the node agent (pods
// bound to the node in, their status out).
//
// Into syncpod, a pod goes through the planner's manifest package, the one
// set of conversion rules and refusals static manifests get
// (ConvertManifest); PodFromAPI trims what the API server adds first. Out
// of syncpod, PodToAPI renders a stored pod as a Pod manifest that converts
// back to the same pod, and StatusToAPI renders the planner's status as the
// status a node writes. Every function is pure: no I/O, no clock, and no
// argument is changed.
package kubeconv
