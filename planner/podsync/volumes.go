package podsync

import (
	"slices"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// ConfigReferences lists the ConfigMaps and Secrets pod names (volumes,
// projected sources, env and envFrom of every container; the pod's token
// Secret for service account token sources), each once, in order of
// appearance.
func ConfigReferences(pod *syncpodv1.Pod) (configMaps, secrets []string) {
	for _, v := range pod.GetSpec().GetVolumes() {
		configMaps = appendName(configMaps, v.GetConfigMap().GetName())
		secrets = appendName(secrets, v.GetSecret().GetSecretName())
		for _, p := range v.GetProjected().GetSources() {
			configMaps = appendName(configMaps, p.GetConfigMap().GetName())
			secrets = appendName(secrets, p.GetSecret().GetName())
			if p.GetServiceAccountToken() != nil {
				// the node agent hands the pod's tokens over as
				// this Secret; a new token reaches the file as any
				// Secret change does.
				secrets = appendName(secrets, validation.TokenSecretName(pod.GetUid()))
			}
		}
	}
	all := slices.Concat(pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers(), pod.GetSpec().GetEphemeralContainers())
	for _, c := range all {
		for _, e := range c.GetEnvFrom() {
			configMaps = appendName(configMaps, e.GetConfigMapRef().GetName())
			secrets = appendName(secrets, e.GetSecretRef().GetName())
		}
		for _, e := range c.GetEnv() {
			configMaps = appendName(configMaps, e.GetValueFrom().GetConfigMapKeyRef().GetName())
			secrets = appendName(secrets, e.GetValueFrom().GetSecretKeyRef().GetName())
		}
	}
	return configMaps, secrets
}

func appendName(list []string, n string) []string {
	if n == "" {
		return list
	}
	for _, x := range list {
		if x == n {
			return list
		}
	}
	return append(list, n)
}

// withVolumeRefresh asks, on a sync of a desired pod that is not terminal
// and has a ready sandbox, for its config-fed volumes to be brought up to
// date: whatever else the sync did (a pod with a container in back-off
// has actions on every sync), their files follow their ConfigMaps, Secrets
// and the pod's metadata.
func withVolumeRefresh(in Input, w Work) Work {
	if w.Status != nil && !isTerminal(w.Status.GetPhase()) &&
		hasUpdatableVolumes(in.Record.GetPod()) && hasReadySandbox(in.Observed) {
		w.RefreshVolumes = true
	}
	return w
}

// hasUpdatableVolumes reports whether pod has volumes whose files follow
// config objects or the pod's metadata.
func hasUpdatableVolumes(pod *syncpodv1.Pod) bool {
	for _, v := range pod.GetSpec().GetVolumes() {
		if v.GetConfigMap() != nil || v.GetSecret() != nil || v.GetProjected() != nil || v.GetDownwardApi() != nil {
			return true
		}
	}
	return false
}

func hasReadySandbox(o *syncpodv1.ObservedPod) bool {
	for _, sb := range o.GetSandboxes() {
		if sb.GetState() == syncpodv1.SandboxState_SANDBOX_STATE_READY {
			return true
		}
	}
	return false
}
