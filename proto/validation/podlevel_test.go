package validation_test

import (
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// spec.resources is checked as the API server checks it, every
// problem at once with its path.
func TestPodLevelResources(t *testing.T) {
	res := func(rc, rm, lc, lm string) *syncpodv1.ResourceRequirements {
		return &syncpodv1.ResourceRequirements{
			Requests: &syncpodv1.ResourceList{Cpu: rc, Memory: rm},
			Limits:   &syncpodv1.ResourceList{Cpu: lc, Memory: lm},
		}
	}
	tests := []struct {
		name  string
		pod   res2
		paths []string // empty: accepted
	}{
		{name: "limits only", pod: res2{pod: res("", "", "1", "1Gi")}},
		{name: "requests only", pod: res2{pod: res("500m", "64Mi", "", "")}},
		{name: "containers within the pod", pod: res2{pod: res("1", "1Gi", "2", "2Gi"), ctrs: []*syncpodv1.ResourceRequirements{res("500m", "512Mi", "1", "1Gi"), res("500m", "512Mi", "", "")}}},
		{name: "bad quantities", pod: res2{pod: res("x", "-1", "", "")}, paths: []string{"spec.resources.requests.cpu", "spec.resources.requests.memory"}},
		{name: "limit below request", pod: res2{pod: res("2", "", "1", "")}, paths: []string{"spec.resources.limits.cpu"}},
		{
			name:  "requests below the containers' aggregate",
			pod:   res2{pod: res("500m", "100Mi", "", ""), ctrs: []*syncpodv1.ResourceRequirements{res("300m", "60Mi", "", ""), res("300m", "60Mi", "", "")}},
			paths: []string{"spec.resources.requests.cpu", "spec.resources.requests.memory"},
		},
		{
			name:  "a container limit above the pod's",
			pod:   res2{pod: res("", "", "1", "1Gi"), ctrs: []*syncpodv1.ResourceRequirements{res("", "", "500m", "2Gi"), res("", "", "2", "")}},
			paths: []string{"spec.containers[0].resources.limits.memory", "spec.containers[1].resources.limits.cpu", "spec.resources.requests.cpu"},
		},
		{
			name:  "defaulted request above the pod-level limit",
			pod:   res2{pod: res("", "", "", "100Mi"), ctrs: []*syncpodv1.ResourceRequirements{res("", "200Mi", "", "")}},
			paths: []string{"spec.resources.requests.memory"},
		},
		{name: "windows pod", pod: res2{pod: res("1", "", "", ""), os: "windows"}, paths: []string{"spec.resources", "spec.os.name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &syncpodv1.Pod{Name: "web", Spec: &syncpodv1.PodSpec{Resources: tt.pod.pod}}
			if tt.pod.os != "" {
				p.Spec.Os = &syncpodv1.PodOS{Name: tt.pod.os}
			}
			for i, r := range append([]*syncpodv1.ResourceRequirements{nil}, tt.pod.ctrs...) {
				if i == 0 && len(tt.pod.ctrs) > 0 {
					continue
				}
				p.Spec.Containers = append(p.Spec.Containers, &syncpodv1.Container{Name: string(rune('a' + i)), Image: "busybox:1.36", Resources: r})
			}
			err := validation.Pod(p)
			if len(tt.paths) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			for _, path := range tt.paths {
				if problemAt(err, path) == "" {
					t.Errorf("no problem at %s (%v)", path, err)
				}
			}
		})
	}
}

type res2 struct {
	pod  *syncpodv1.ResourceRequirements
	ctrs []*syncpodv1.ResourceRequirements
	os   string
}
