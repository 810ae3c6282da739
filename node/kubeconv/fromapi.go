package kubeconv

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/syncpod/syncpod/planner/manifest"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// SourceAPI is the value of manifest.SourceAnnotation on pods this agent
// put in the planner, as the kubelet marks pods from the API server.
const SourceAPI = "api"

// ErrUnsupported classifies a pod the planner cannot run (a field syncpod
// does not implement); the issues are in the message.
var ErrUnsupported = errors.New("unsupported pod")

// serviceAccountVolumePrefix starts the name of the projected volume the
// API server's ServiceAccount admission adds to every pod that mounts its
// token.
const serviceAccountVolumePrefix = "kube-api-access-"

// PodFromAPI converts a pod bound to this node into a desired pod for the
// planner, with the same conversion (and the same refusals) static
// manifests get. Only name, namespace, uid, labels and annotations of the
// metadata are kept; the annotations gain kubernetes.io/config.source=api,
// and the metadata.generation becomes the source generation.
// The service-account token volume the API server injects is dropped (with
// a warning): syncpod does not mount it. enableServiceLinks is left to the
// agent, which computes the pod's Service environment from it. Warnings
// are fields ignored; an error wraps ErrUnsupported and lists every field
// refused.
func PodFromAPI(kp *corev1.Pod) (*syncpodv1.Pod, []string, error) {
	ann := maps.Clone(kp.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	ann[manifest.SourceAnnotation] = SourceAPI
	trimmed := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: kp.Name, Namespace: kp.Namespace, UID: kp.UID,
			Labels: maps.Clone(kp.Labels), Annotations: ann,
		},
		Spec: *kp.Spec.DeepCopy(),
	}
	// The agent reads enableServiceLinks itself for the pod's Service
	// environment: it is no field ignored here.
	trimmed.Spec.EnableServiceLinks = nil
	var warnings []string
	if dropped := dropServiceAccountToken(&trimmed.Spec); dropped != "" {
		warnings = append(warnings, fmt.Sprintf("spec.volumes: service-account token volume %s is not mounted by syncpod", dropped))
	}
	js, err := json.Marshal(&trimmed)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	pod, more, err := ConvertManifest(js)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	pod.SourceGeneration = kp.Generation
	return pod, append(warnings, more...), nil
}

// ConvertManifest converts one Kubernetes v1 Pod document (JSON) with the
// planner's manifest package, the same conversion static manifests get:
// unsupported fields are errors, cluster-only ones warnings. It is the
// converter syncpodctl runs with, and the last step of PodFromAPI.
func ConvertManifest(js []byte) (*syncpodv1.Pod, []string, error) {
	pods, issues, err := manifest.Parse(js)
	if err != nil {
		return nil, nil, err
	}
	if len(pods) != 1 {
		return nil, nil, fmt.Errorf("want one pod, found %d", len(pods))
	}
	warnings := make([]string, len(issues))
	for i, is := range issues {
		warnings[i] = is.String()
	}
	return pods[0], warnings, nil
}

// IsServiceAccountVolume says whether v is the projected service-account
// token volume the API server adds.
func IsServiceAccountVolume(v corev1.Volume) bool {
	return strings.HasPrefix(v.Name, serviceAccountVolumePrefix) && v.Projected != nil
}

// dropServiceAccountToken removes the projected service-account token
// volume and its mounts; it returns the volume's name, or "".
func dropServiceAccountToken(spec *corev1.PodSpec) string {
	name := ""
	kept := spec.Volumes[:0]
	for _, v := range spec.Volumes {
		if IsServiceAccountVolume(v) {
			name = v.Name
			continue
		}
		kept = append(kept, v)
	}
	if name == "" {
		return ""
	}
	spec.Volumes = kept
	if len(spec.Volumes) == 0 {
		spec.Volumes = nil
	}
	strip := func(cs []corev1.Container) {
		for i := range cs {
			m := cs[i].VolumeMounts[:0]
			for _, vm := range cs[i].VolumeMounts {
				if vm.Name != name {
					m = append(m, vm)
				}
			}
			cs[i].VolumeMounts = m
			if len(m) == 0 {
				cs[i].VolumeMounts = nil
			}
		}
	}
	strip(spec.InitContainers)
	strip(spec.Containers)
	for i := range spec.EphemeralContainers {
		ec := &spec.EphemeralContainers[i].EphemeralContainerCommon
		one := []corev1.Container{corev1.Container(*ec)}
		strip(one)
		ec.VolumeMounts = one[0].VolumeMounts
	}
	return name
}
