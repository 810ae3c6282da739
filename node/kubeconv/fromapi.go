package kubeconv

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"

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

// PodFromAPI converts a pod bound to this node into a desired pod for the
// planner, with the same conversion (and the same refusals) static
// manifests get. Only name, namespace, uid, labels and annotations of the
// metadata are kept; the annotations gain kubernetes.io/config.source=api,
// and the metadata.generation becomes the source generation.
// Projected service account token sources (the kube-api-access-* volume
// the API server adds, and any other) are kept: the agent obtains their
// tokens. enableServiceLinks is left to the
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
	js, err := json.Marshal(&trimmed)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	pod, more, err := ConvertManifest(js)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	pod.SourceGeneration = kp.Generation
	return pod, more, nil
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
