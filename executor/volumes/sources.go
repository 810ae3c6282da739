package volumes

import (
	"fmt"
	"slices"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Sources are the ConfigMaps and Secrets a pod may read, by namespace and
// name. The zero value has none.
type Sources struct {
	configMaps map[string]*syncpodv1.ConfigMap
	secrets    map[string]*syncpodv1.Secret
}

func objKey(ns, name string) string {
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + name
}

// NewSources indexes cms and secrets.
func NewSources(cms []*syncpodv1.ConfigMap, secrets []*syncpodv1.Secret) Sources {
	s := Sources{configMaps: map[string]*syncpodv1.ConfigMap{}, secrets: map[string]*syncpodv1.Secret{}}
	for _, c := range cms {
		s.configMaps[objKey(c.GetNamespace(), c.GetName())] = c
	}
	for _, x := range secrets {
		s.secrets[objKey(x.GetNamespace(), x.GetName())] = x
	}
	return s
}

// configMapData returns the ConfigMap's keys and values (data and
// binary_data), or an error in the kubelet's words.
func (s Sources) configMapData(ns, name string) (map[string][]byte, error) {
	c, ok := s.configMaps[objKey(ns, name)]
	if !ok {
		return nil, fmt.Errorf("configmap %q not found", name)
	}
	out := make(map[string][]byte, len(c.GetData())+len(c.GetBinaryData()))
	for k, v := range c.GetData() {
		out[k] = []byte(v)
	}
	for k, v := range c.GetBinaryData() {
		out[k] = v
	}
	return out, nil
}

func (s Sources) secretData(ns, name string) (map[string][]byte, error) {
	x, ok := s.secrets[objKey(ns, name)]
	if !ok {
		return nil, fmt.Errorf("secret %q not found", name)
	}
	return x.GetData(), nil
}

// References lists the ConfigMaps and Secrets pod refers to (volumes,
// projected sources, env and envFrom of every container), each once, in
// first-use order.
func References(pod *syncpodv1.Pod) (configMaps, secrets []string) {
	seenC, seenS := map[string]bool{}, map[string]bool{}
	addC := func(n string) {
		if n != "" && !seenC[n] {
			seenC[n] = true
			configMaps = append(configMaps, n)
		}
	}
	addS := func(n string) {
		if n != "" && !seenS[n] {
			seenS[n] = true
			secrets = append(secrets, n)
		}
	}
	for _, v := range pod.GetSpec().GetVolumes() {
		addC(v.GetConfigMap().GetName())
		addS(v.GetSecret().GetSecretName())
		for _, p := range v.GetProjected().GetSources() {
			addC(p.GetConfigMap().GetName())
			addS(p.GetSecret().GetName())
			if p.GetServiceAccountToken() != nil {
				addS(validation.TokenSecretName(pod.GetUid()))
			}
		}
	}
	all := slices.Concat(pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers(), pod.GetSpec().GetEphemeralContainers())
	for _, c := range all {
		for _, e := range c.GetEnvFrom() {
			addC(e.GetConfigMapRef().GetName())
			addS(e.GetSecretRef().GetName())
		}
		for _, e := range c.GetEnv() {
			addC(e.GetValueFrom().GetConfigMapKeyRef().GetName())
			addS(e.GetValueFrom().GetSecretKeyRef().GetName())
		}
	}
	return configMaps, secrets
}

// HasUpdatableVolumes reports whether pod has a volume whose content
// follows config objects or pod metadata (configMap, secret, projected,
// downwardAPI).
func HasUpdatableVolumes(pod *syncpodv1.Pod) bool {
	for _, v := range pod.GetSpec().GetVolumes() {
		if v.GetConfigMap() != nil || v.GetSecret() != nil || v.GetProjected() != nil || v.GetDownwardApi() != nil {
			return true
		}
	}
	return false
}
