// Package k8snames spells syncpod's API enums the way Kubernetes spells
// the same values (k8s.io/api/core/v1: "OnFailure", "Succeeded", "True",
// "Warning"), for messages, the CLI and conversions to Kubernetes
// objects. It is the one place these names are written; each function
// documents what an unspecified or unknown value becomes (the kubelet's
// default where there is one). It imports only the generated types, so
// the pure planning code may use it as well as clients.
package k8snames
