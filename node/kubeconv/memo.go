package kubeconv

import (
	"maps"
	"reflect"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Converter is PodFromAPI with a memory of the last pod it converted under
// each namespace/name: the API server sends a pod again on every change of
// its status (and of anything else), and the conversion reads only its
// name, namespace, uid, labels, annotations and spec, so a pod equal to
// the remembered one in all of those gets the remembered answer (a copy,
// with the source generation of the pod given) instead of being converted
// again. Refusals are not remembered. Safe for concurrent use.
type Converter struct {
	mu   sync.Mutex
	last map[string]converted
	// conversions counts the pods converted rather than remembered.
	conversions int
}

type converted struct {
	uid                 types.UID
	labels, annotations map[string]string
	spec                *corev1.PodSpec
	pod                 *syncpodv1.Pod
	warnings            []string
}

// NewConverter returns a Converter that remembers nothing yet.
func NewConverter() *Converter {
	return &Converter{last: map[string]converted{}}
}

// PodFromAPI is the package's PodFromAPI, answered from memory when kp
// converts as the last pod converted under its name did. A nil Converter
// remembers nothing.
func (c *Converter) PodFromAPI(kp *corev1.Pod) (*syncpodv1.Pod, []string, error) {
	if c == nil {
		return PodFromAPI(kp)
	}
	key := kp.Namespace + "/" + kp.Name
	c.mu.Lock()
	prev, ok := c.last[key]
	c.mu.Unlock()
	if ok && prev.uid == kp.UID && maps.Equal(prev.labels, kp.Labels) &&
		maps.Equal(prev.annotations, kp.Annotations) && reflect.DeepEqual(prev.spec, &kp.Spec) {
		return answer(prev.pod, prev.warnings, kp.Generation)
	}
	pod, warnings, err := PodFromAPI(kp)
	c.mu.Lock()
	c.conversions++
	c.mu.Unlock()
	if err != nil {
		c.Forget(kp.Namespace, kp.Name)
		return nil, nil, err
	}
	c.mu.Lock()
	c.last[key] = converted{
		uid: kp.UID, labels: maps.Clone(kp.Labels), annotations: maps.Clone(kp.Annotations),
		spec: kp.Spec.DeepCopy(), pod: proto.Clone(pod).(*syncpodv1.Pod), warnings: slices.Clone(warnings),
	}
	c.mu.Unlock()
	return pod, warnings, nil
}

// answer is a copy of a remembered conversion, the caller's to change.
func answer(pod *syncpodv1.Pod, warnings []string, generation int64) (*syncpodv1.Pod, []string, error) {
	out := proto.Clone(pod).(*syncpodv1.Pod)
	out.SourceGeneration = generation
	return out, slices.Clone(warnings), nil
}

// Forget drops what is remembered of the pod namespace/name (it left the
// node).
func (c *Converter) Forget(namespace, name string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.last, namespace+"/"+name)
	c.mu.Unlock()
}

// Len is the number of pods remembered.
func (c *Converter) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.last)
}
