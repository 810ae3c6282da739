package validation_test

import (
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// resize policies as the API server checks them: cpu or memory,
// each once, never on an ephemeral container.
func TestResizePolicyIsCheckedAsTheAPIServerDoes(t *testing.T) {
	restart := syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER
	tests := []struct {
		name     string
		policies []*syncpodv1.ContainerResizePolicy
		ephem    bool
		want     string
	}{
		{"R-25.3 cpu and memory", []*syncpodv1.ContainerResizePolicy{{ResourceName: "cpu"}, {ResourceName: "memory", RestartPolicy: restart}}, false, ""},
		{"R-25.3 another resource", []*syncpodv1.ContainerResizePolicy{{ResourceName: "hugepages-2Mi"}}, false, "spec.containers[0].resize_policy[0].resource_name"},
		{"R-25.3 twice", []*syncpodv1.ContainerResizePolicy{{ResourceName: "cpu"}, {ResourceName: "cpu", RestartPolicy: restart}}, false, "spec.containers[0].resize_policy[1].resource_name"},
		{"R-25.3 unknown policy", []*syncpodv1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: 7}}, false, "spec.containers[0].resize_policy[0].restart_policy"},
		{"R-25.3 not on an ephemeral container", []*syncpodv1.ContainerResizePolicy{{ResourceName: "cpu"}}, true, "spec.ephemeral_containers[0].resize_policy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &syncpodv1.Pod{Name: "p", Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox"}}}}
			if tc.ephem {
				p.Spec.EphemeralContainers = []*syncpodv1.Container{{Name: "debug", Image: "busybox", ResizePolicy: tc.policies}}
			} else {
				p.Spec.Containers[0].ResizePolicy = tc.policies
			}
			err := validation.Pod(p)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one at %s", err, tc.want)
			}
		})
	}
}
