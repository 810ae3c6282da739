package validation

import (
	"fmt"
	"strings"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Service account tokens: a projected volume's
// service_account_token source is issued by the Kubernetes API server, so
// only a pod from it may have one. The node agent obtains the tokens and
// hands them to the planner as one Secret per pod, in the pod's
// namespace, named TokenSecretName(uid), one key per source
// (TokenSecretKey). A Secret is never logged and never listed in clear,
// and a new token changes no spec: the executor rewrites the file in
// place.
const (
	// SourceAnnotation is the annotation that says where a pod comes from
	// (the kubelet's kubernetes.io/config.source).
	SourceAnnotation = "kubernetes.io/config.source"
	// SourceAPI is its value on pods from the Kubernetes API server.
	SourceAPI = "api"
	// TokenSecretPrefix starts the name of a pod's token Secret.
	TokenSecretPrefix = "syncpod-sa-token-"
	// DefaultTokenExpirationSeconds is the lifetime requested when a
	// source sets none (the API server's default).
	DefaultTokenExpirationSeconds = 3600
	// MinTokenExpirationSeconds is the shortest lifetime a source may ask
	// for (ten minutes).
	MinTokenExpirationSeconds = 600
	// MaxTokenExpirationSeconds is the longest (2^32 seconds).
	MaxTokenExpirationSeconds = 1 << 32
)

// TokenSecretName is the name of the Secret that carries the service
// account tokens of the pod with this uid.
func TokenSecretName(podUID string) string {
	return TokenSecretPrefix + strings.ToLower(podUID)
}

// TokenSecretKey is the key, in the pod's token Secret, of the token of
// source index of volume.
func TokenSecretKey(volume string, index int) string {
	return fmt.Sprintf("%s.%d", volume, index)
}

// HasServiceAccountToken reports whether pod has a projected
// service_account_token source.
func HasServiceAccountToken(pod *syncpodv1.Pod) bool {
	for _, v := range pod.GetSpec().GetVolumes() {
		for _, s := range v.GetProjected().GetSources() {
			if s.GetServiceAccountToken() != nil {
				return true
			}
		}
	}
	return false
}

// serviceAccountToken checks one source as the API server does (a path
// that is local and not reserved, a lifetime of at least ten minutes and
// at most 2^32 seconds) and that the pod comes from the API server.
func (l *list) serviceAccountToken(p string, t *syncpodv1.ServiceAccountTokenProjection, fromAPI bool) {
	if !fromAPI {
		l.Add(p, "a service account token is issued by the Kubernetes API server (TokenRequest); "+
			"only a pod from the API server (annotation %s=%s, put by syncpod-node) can have one, "+
			"a pod applied to a standalone syncpod cannot: remove the source or run the pod through a cluster",
			SourceAnnotation, SourceAPI)
	}
	if e := t.GetExpirationSeconds(); e != 0 && e < MinTokenExpirationSeconds {
		l.Add(p+".expiration_seconds", "may not specify a duration less than 10 minutes (600 seconds), got %d", e)
	} else if e > MaxTokenExpirationSeconds {
		l.Add(p+".expiration_seconds", "may not specify a duration larger than 2^32 seconds, got %d", e)
	}
	l.relPath(p+".path", t.GetPath())
	l.maxLen(p+".audience", t.GetAudience(), MaxPathLen)
}
