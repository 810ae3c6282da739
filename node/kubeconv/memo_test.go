package kubeconv

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/syncpod/syncpod/node/kubeconv/kubeconvtest"
)

// TestConverterRemembers: the Converter answers as PodFromAPI does for
// every pod; a pod changed only where the conversion does not read
// (status, resource version, generation, owner) is not converted again,
// one changed where it reads (uid, labels, annotations, spec) is.
func TestConverterRemembers(t *testing.T) {
	c := NewConverter()
	steps := []struct {
		name    string
		change  func(*corev1.Pod)
		convert bool
	}{
		{"first sight", func(*corev1.Pod) {}, true},
		{"same pod again", func(*corev1.Pod) {}, false},
		{"status and resource version", func(p *corev1.Pod) {
			p.ResourceVersion = "43"
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, false},
		{"generation (the source generation follows)", func(p *corev1.Pod) { p.Generation = 7 }, false},
		{"owner and deletion cost unread", func(p *corev1.Pod) { p.OwnerReferences = nil }, false},
		{"a label", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web", "tier": "front"} }, true},
		{"an annotation", func(p *corev1.Pod) { p.Annotations = map[string]string{"note": "y"} }, true},
		{"the spec: an image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox:1.37" }, true},
		{"the spec: resources", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
		}, true},
		{"another incarnation (uid)", func(p *corev1.Pod) { p.UID = "1f0e2a3b-0000-4000-8000-000000000002" }, true},
		{"deletion marked, nothing read changed", func(p *corev1.Pod) {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}, false},
	}
	kp := kubeconvtest.APIPod()
	for _, st := range steps {
		kp = kp.DeepCopy()
		st.change(kp)
		before := c.conversions
		got, gotWarnings, err := c.PodFromAPI(kp)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		want, wantWarnings, err := PodFromAPI(kp)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) || len(gotWarnings) != len(wantWarnings) {
			t.Errorf("%s: got %v %q, PodFromAPI %v %q", st.name, got, gotWarnings, want, wantWarnings)
		}
		if converted := c.conversions > before; converted != st.convert {
			t.Errorf("%s: converted again %v, want %v", st.name, converted, st.convert)
		}
		// The answer is the caller's: changing it changes nothing
		// remembered.
		got.ServiceEnvironment = map[string]string{"X": "1"}
		got.Spec.Containers[0].Image = "changed"
	}
	if n := c.Len(); n != 1 {
		t.Errorf("remembered %d pods, want 1", n)
	}
	c.Forget(kp.Namespace, kp.Name)
	if n := c.Len(); n != 0 {
		t.Errorf("after Forget remembered %d pods, want 0", n)
	}
}

// TestConverterRefusalNotRemembered: a refused pod is refused every time,
// and forgets the pod converted before under its name.
func TestConverterRefusalNotRemembered(t *testing.T) {
	c := NewConverter()
	kp := kubeconvtest.APIPod()
	if _, _, err := c.PodFromAPI(kp); err != nil {
		t.Fatal(err)
	}
	bad := kp.DeepCopy()
	bad.Spec.Volumes = append(bad.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}})
	for range 2 {
		if _, _, err := c.PodFromAPI(bad); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("a pod with a claim: err %v, want ErrUnsupported", err)
		}
	}
	if n := c.Len(); n != 0 {
		t.Errorf("remembered %d pods after a refusal, want 0", n)
	}
}
