package plan_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// the Service environment variables are carried beside the spec,
// not in it: a Service created, changed or deleted after a container
// started changes neither its spec hash nor its sandbox's, so nothing is
// restarted or re-created.
func TestServiceEnvironmentChangeRestartsNothing(t *testing.T) {
	web := ctr("web")
	before := mkPod(always, nil, web)
	before.ServiceEnvironment = map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443",
	}
	s := sb("s1", 1, ready, 0)
	s.ConfigHash = plan.SandboxHash(before)
	observed := obs(sbs(s), inst("c1", web, 2, running, 0, "s1"))

	for name, env := range map[string]map[string]string{
		"a Service added":    {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "REDIS_SERVICE_HOST": "10.0.0.9"},
		"a Service changed":  {"KUBERNETES_SERVICE_HOST": "10.0.0.2", "KUBERNETES_SERVICE_PORT": "6443"},
		"every Service gone": nil,
	} {
		t.Run(name, func(t *testing.T) {
			after := proto.Clone(before).(*syncpodv1.Pod)
			after.ServiceEnvironment = env
			if got, want := plan.SpecHash(after.Spec.Containers[0]), plan.SpecHash(before.Spec.Containers[0]); got != want {
				t.Errorf("spec hash %s, want %s", got, want)
			}
			if got, want := plan.SandboxHash(after), plan.SandboxHash(before); got != want {
				t.Errorf("sandbox hash %s, want %s", got, want)
			}
			if got := render(plan.Compute(after, observed, nil)); got != "noop" {
				t.Errorf("Compute = %s, want noop", got)
			}
		})
	}
}
