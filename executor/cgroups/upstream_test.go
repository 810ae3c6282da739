package cgroups

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/syncpod/syncpod/proto/podresources"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestPodTotalsMatchUpstream checks podresources' sums against the
// Kubernetes helper the kubelet sizes pod cgroups with
// (component-helpers' PodRequests and PodLimits) on random pods: init
// containers, sidecars, regular containers, pod-level values and
// overhead. The pods are given as the API server stores them (every
// container request that defaults from a limit, and every pod-level
// request, written out), so the comparison is of the arithmetic alone;
// the defaulting has its own tests.
func TestPodTotalsMatchUpstream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		sp, kp := randomPod(rng)
		for _, o := range []bool{false, true} {
			opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: o}
			wantReq := resourcehelper.PodRequests(kp, opts)
			wantLim := resourcehelper.PodLimits(kp, opts)
			gotReq := podresources.PodRequests(sp, podresources.Options{ExcludeOverhead: o})
			gotLim := podresources.PodLimits(sp, podresources.Options{ExcludeOverhead: o})
			check := func(what string, got podresources.List, want corev1.ResourceList) {
				t.Helper()
				c, hasC := want[corev1.ResourceCPU]
				m, hasM := want[corev1.ResourceMemory]
				if got.HasCPU != hasC || got.MilliCPU != c.MilliValue() || got.HasMemory != hasM || got.Memory != m.Value() {
					t.Fatalf("pod %d (overhead excluded %v) %s: got %+v, upstream %v\nspec %v", i, o, what, got, want, sp.GetSpec())
				}
			}
			check("requests", gotReq, wantReq)
			check("limits", gotLim, wantLim)
		}
	}
}

// randomPod is one pod in both forms.
func randomPod(rng *rand.Rand) (*syncpodv1.Pod, *corev1.Pod) {
	sp := &syncpodv1.PodSpec{}
	kp := &corev1.Pod{}
	list := func() (*syncpodv1.ResourceList, corev1.ResourceList) {
		s, k := &syncpodv1.ResourceList{}, corev1.ResourceList{}
		if rng.IntN(3) > 0 {
			v := fmt.Sprintf("%dm", rng.IntN(4000))
			s.Cpu, k[corev1.ResourceCPU] = v, resource.MustParse(v)
		}
		if rng.IntN(3) > 0 {
			v := fmt.Sprintf("%dMi", rng.IntN(2048))
			s.Memory, k[corev1.ResourceMemory] = v, resource.MustParse(v)
		}
		return s, k
	}
	// requirements: requests written out wherever a limit is (as the API
	// server defaults them).
	requirements := func() (*syncpodv1.ResourceRequirements, corev1.ResourceRequirements) {
		sl, kl := list()
		sr, kr := list()
		if sl.Cpu != "" && sr.Cpu == "" {
			sr.Cpu, kr[corev1.ResourceCPU] = sl.Cpu, kl[corev1.ResourceCPU]
		}
		if sl.Memory != "" && sr.Memory == "" {
			sr.Memory, kr[corev1.ResourceMemory] = sl.Memory, kl[corev1.ResourceMemory]
		}
		return &syncpodv1.ResourceRequirements{Requests: sr, Limits: sl}, corev1.ResourceRequirements{Requests: kr, Limits: kl}
	}
	always := corev1.ContainerRestartPolicyAlways
	for j := range rng.IntN(4) {
		sr, kr := requirements()
		sc := &syncpodv1.Container{Name: fmt.Sprintf("i%d", j), Resources: sr}
		kc := corev1.Container{Name: sc.Name, Resources: kr}
		if rng.IntN(2) == 0 {
			sc.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
			kc.RestartPolicy = &always
		}
		sp.InitContainers, kp.Spec.InitContainers = append(sp.InitContainers, sc), append(kp.Spec.InitContainers, kc)
	}
	for j := range 1 + rng.IntN(3) {
		sr, kr := requirements()
		sp.Containers = append(sp.Containers, &syncpodv1.Container{Name: fmt.Sprintf("c%d", j), Resources: sr})
		kp.Spec.Containers = append(kp.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", j), Resources: kr})
	}
	if rng.IntN(2) == 0 {
		// Pod-level values with everything written out, so that no
		// defaulting is involved.
		rc, rm := rng.IntN(4000), rng.IntN(2048)
		lc, lm := rc+rng.IntN(4000), rm+rng.IntN(2048)
		sr := &syncpodv1.ResourceRequirements{
			Requests: &syncpodv1.ResourceList{Cpu: fmt.Sprintf("%dm", rc), Memory: fmt.Sprintf("%dMi", rm)},
			Limits:   &syncpodv1.ResourceList{Cpu: fmt.Sprintf("%dm", lc), Memory: fmt.Sprintf("%dMi", lm)},
		}
		kr := corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(sr.Requests.Cpu), corev1.ResourceMemory: resource.MustParse(sr.Requests.Memory)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(sr.Limits.Cpu), corev1.ResourceMemory: resource.MustParse(sr.Limits.Memory)},
		}
		sp.Resources, kp.Spec.Resources = sr, &kr
	}
	if rng.IntN(2) == 0 {
		so, ko := list()
		sp.Overhead, kp.Spec.Overhead = so, ko
	}
	return &syncpodv1.Pod{Uid: "u", Spec: sp}, kp
}
