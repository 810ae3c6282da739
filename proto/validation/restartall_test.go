package validation_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

func restartAllRule(codes ...int32) *syncpodv1.ContainerRestartRule {
	return &syncpodv1.ContainerRestartRule{
		Action:    syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS,
		ExitCodes: &syncpodv1.ContainerRestartRuleOnExitCodes{Operator: syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, Values: codes},
	}
}

// as the API server with RestartAllContainersOnContainerExits, a
// RestartAllContainers rule is allowed on a regular container, a regular
// init container and a sidecar, each with a restart policy of its own; an
// ephemeral container may have no rule at all.
func TestRestartAllContainersRuleAllowedWhereTheAPIServerAllowsIt(t *testing.T) {
	always := syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	never := syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER
	pod := func() *syncpodv1.Pod {
		return &syncpodv1.Pod{Name: "p", Spec: &syncpodv1.PodSpec{
			InitContainers: []*syncpodv1.Container{
				{Name: "setup", Image: "busybox", RestartPolicy: never, RestartPolicyRules: []*syncpodv1.ContainerRestartRule{restartAllRule(1)}},
				{Name: "proxy", Image: "busybox", RestartPolicy: always, RestartPolicyRules: []*syncpodv1.ContainerRestartRule{restartAllRule(2)}},
			},
			Containers: []*syncpodv1.Container{
				{Name: "app", Image: "busybox", RestartPolicy: never, RestartPolicyRules: []*syncpodv1.ContainerRestartRule{restartAllRule(42)}},
			},
		}}
	}
	if err := validation.Pod(pod()); err != nil {
		t.Fatalf("valid RestartAllContainers rules refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*syncpodv1.Pod)
		want   []string
	}{
		{"needs the container's own restart policy", func(p *syncpodv1.Pod) { p.Spec.Containers[0].RestartPolicy = 0 },
			[]string{"spec.containers[0].restart_policy_rules"}},
		{"needs exit codes", func(p *syncpodv1.Pod) { p.Spec.InitContainers[1].RestartPolicyRules[0].ExitCodes = nil },
			[]string{"spec.init_containers[1].restart_policy_rules[0].exit_codes"}},
		{"not on an ephemeral container", func(p *syncpodv1.Pod) {
			p.Spec.EphemeralContainers = []*syncpodv1.Container{{Name: "dbg", Image: "busybox", RestartPolicyRules: []*syncpodv1.ContainerRestartRule{restartAllRule(1)}}}
		}, []string{"spec.ephemeral_containers[0].restart_policy_rules"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod()
			tc.mutate(p)
			err := validation.Pod(p)
			var got []string
			for _, fe := range fielderr.As(err) {
				got = append(got, fe.Path)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("paths = %q, want %q (%v)", got, tc.want, err)
			}
			if err != nil && !strings.Contains(err.Error(), "restart_policy_rules") {
				t.Errorf("message does not name the field: %v", err)
			}
		})
	}
}
