package validation

import (
	"strings"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The defaults every module applies to a pod that leaves them out, defined
// once here (a package every module and client can import without heavy
// dependencies).
const (
	// DefaultNamespace is the namespace of a pod that names none.
	DefaultNamespace = "default"
	// DefaultGracePeriodSeconds is the termination grace period of a pod
	// that sets none (the kubelet's and the API server's 30 s).
	DefaultGracePeriodSeconds int64 = 30
	// MinGracePeriodSeconds is the floor of every stop's grace period
	//
	MinGracePeriodSeconds int64 = 2
)

// NamespaceOrDefault returns ns, or DefaultNamespace when ns is empty.
func NamespaceOrDefault(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// PodGracePeriodSeconds is the grace period a kill of the whole pod gets:
// its deletion grace period when set, else its spec's termination grace
// period, else DefaultGracePeriodSeconds. It is not floored (see
// MinGracePeriodSeconds). A nil pod gets the default.
func PodGracePeriodSeconds(p *syncpodv1.Pod) int64 {
	if p != nil && p.DeletionGracePeriodSeconds != nil {
		return p.GetDeletionGracePeriodSeconds()
	}
	if s := p.GetSpec(); s != nil && s.TerminationGracePeriodSeconds != nil {
		return s.GetTerminationGracePeriodSeconds()
	}
	return DefaultGracePeriodSeconds
}

// DefaultPullPolicy is the pull policy the API server gives an image
// reference that sets none: Always when its tag is "latest" or it has
// neither tag nor digest, IfNotPresent otherwise (a digest counts as a
// tag). Containers and image volumes default alike.
func DefaultPullPolicy(image string) syncpodv1.ImagePullPolicy {
	if strings.Contains(image, "@") {
		return syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT
	}
	last := image[strings.LastIndex(image, "/")+1:]
	tag := ""
	if i := strings.LastIndex(last, ":"); i >= 0 {
		tag = last[i+1:]
	}
	if tag == "" || tag == "latest" {
		return syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS
	}
	return syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT
}

// ImageVolumePullPolicy is the effective pull policy of an image volume:
// its own, else DefaultPullPolicy of its reference.
func ImageVolumePullPolicy(src *syncpodv1.ImageVolumeSource) syncpodv1.ImagePullPolicy {
	if p := src.GetPullPolicy(); p != syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_UNSPECIFIED {
		return p
	}
	return DefaultPullPolicy(src.GetReference())
}
