package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/syncpod/syncpod/node/kubeconv/kubeconvtest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

func TestPodChangedIgnoresStatusWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		want   bool
	}{
		{"status only (our own write)", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 3}}
			p.ResourceVersion = "43"
		}, false},
		{"phase ended", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		{"image changed", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox:1.37" }, true},
		{"label added", func(p *corev1.Pod) { p.Labels["tier"] = "db" }, true},
		{"deletion", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }, true},
		{"new generation (R-19.2)", func(p *corev1.Pod) { p.Generation++ }, true},
		// the ephemeralcontainers subresource changes only this.
		{"ephemeral container added", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1.36"}})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := kubeconvtest.APIPod()
			cur := old.DeepCopy()
			tc.change(cur)
			if got := podChanged(old, cur); got != tc.want {
				t.Errorf("podChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

// events about an ephemeral container name it by its own field
// path, as the kubelet's do.
func TestEventRefOfAnEphemeralContainer(t *testing.T) {
	kp := kubeconvtest.APIPod()
	kp.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger"}}}
	if got := eventRef(kp, "debugger").FieldPath; got != "spec.ephemeralContainers{debugger}" {
		t.Errorf("field path %q", got)
	}
	if got := eventRef(kp, kp.Spec.Containers[0].Name).FieldPath; got != "spec.containers{"+kp.Spec.Containers[0].Name+"}" {
		t.Errorf("field path %q", got)
	}
}

func TestMirrorNameOfStaticPodsOnly(t *testing.T) {
	a := &Agent{o: Options{NodeName: "node1"}, mirror: &mirrors{static: map[string]*plannerv1.PodRecord{
		"kube-system/etcd": {}, "default/web": {}, "default/gone": nil,
	}}}
	for _, tc := range []struct {
		ns, name, want string
		ok             bool
	}{
		{"kube-system", "etcd", "etcd-node1", true},
		{"", "web", "web-node1", true},
		{"default", "gone", "", false},
		{"default", "api", "", false},
	} {
		if got, ok := a.MirrorName(tc.ns, tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("MirrorName(%q, %q) = %q, %v; want %q, %v", tc.ns, tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
