package plan_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/validate"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// bytesGen turns fuzz input into choices; it yields zeros once exhausted.
type bytesGen struct{ b []byte }

func (g *bytesGen) next() int {
	if len(g.b) == 0 {
		return 0
	}
	v := int(g.b[0])
	g.b = g.b[1:]
	return v
}

func (g *bytesGen) n(k int) int { return g.next() % k }

// generate builds a pod, observed state and probe results from bytes; names,
// ids and enum values are drawn from small sets so they collide often, and
// values outside the enums appear too.
func generate(data []byte) (*syncpodv1.Pod, *syncpodv1.ObservedPod, []*syncpodv1.ContainerProbeResults) {
	g := &bytesGen{data}
	names := []string{"a", "b", "c", "d", "", "Bad_Name"}
	pod := &syncpodv1.Pod{Name: "p", Spec: &syncpodv1.PodSpec{RestartPolicy: syncpodv1.RestartPolicy(g.n(5)), HostNetwork: g.n(2) == 0}}
	if g.n(6) == 0 {
		pod.DeletionTime = &timestamppb.Timestamp{Seconds: 1}
	}
	if g.n(10) == 0 {
		pod.Spec = nil
	}
	mk := func() *syncpodv1.Container {
		c := &syncpodv1.Container{Name: names[g.n(len(names))], Image: "img", RestartPolicy: syncpodv1.ContainerRestartPolicy(g.n(5))}
		for range g.n(3) {
			c.RestartPolicyRules = append(c.RestartPolicyRules, &syncpodv1.ContainerRestartRule{
				Action:    syncpodv1.ContainerRestartRuleAction(g.n(3)),
				ExitCodes: &syncpodv1.ContainerRestartRuleOnExitCodes{Operator: syncpodv1.ExitCodeOperator(g.n(4)), Values: []int32{int32(g.n(4)) - 1}},
			})
		}
		if g.n(3) == 0 {
			c.LivenessProbe = execProbe()
		}
		if g.n(3) == 0 {
			c.StartupProbe = &syncpodv1.Probe{}
		}
		return c
	}
	if pod.Spec != nil {
		for range g.n(4) {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, mk())
		}
		for range g.n(5) {
			pod.Spec.Containers = append(pod.Spec.Containers, mk())
		}
	}
	o := &syncpodv1.ObservedPod{}
	if g.n(8) == 0 {
		o = nil
	} else {
		for i := range g.n(4) {
			o.Sandboxes = append(o.Sandboxes, &syncpodv1.ObservedSandbox{
				Id: fmt.Sprintf("s%d", g.n(3)+i%2), State: syncpodv1.SandboxState(g.n(4)), Attempt: uint32(g.next()) * 16843009,
				CreatedAt: &timestamppb.Timestamp{Seconds: int64(g.n(4))}, Ip: []string{"", "10.0.0.1"}[g.n(2)], HostNetwork: g.n(2) == 0,
			})
		}
		for range g.n(8) {
			c := &syncpodv1.ObservedContainer{
				Id: fmt.Sprintf("c%d", g.n(6)), Name: names[g.n(len(names))], State: syncpodv1.ContainerState(g.n(6)),
				ExitCode: int32(g.n(4)) - 1, SandboxId: fmt.Sprintf("s%d", g.n(4)), SpecHash: []string{"", "x"}[g.n(2)],
			}
			if g.n(4) > 0 {
				c.CreatedAt = &timestamppb.Timestamp{Seconds: int64(g.n(4)), Nanos: int32(g.n(3))}
			}
			if g.n(5) == 0 {
				c.Reason = "OOMKilled"
			}
			o.Containers = append(o.Containers, c)
		}
	}
	var probes []*syncpodv1.ContainerProbeResults
	for range g.n(4) {
		probes = append(probes, &syncpodv1.ContainerProbeResults{
			Name: names[g.n(len(names))], ContainerId: fmt.Sprintf("c%d", g.n(7)),
			Liveness: syncpodv1.ProbeResult(g.n(4)), Startup: syncpodv1.ProbeResult(g.n(4)),
		})
	}
	return pod, o, probes
}

func checkPlan(t *testing.T, pod *syncpodv1.Pod, o *syncpodv1.ObservedPod, probes []*syncpodv1.ContainerProbeResults) {
	err := validate.Request(pod, o, probes)
	_ = validate.Pod(pod)
	_ = validate.Observed(o)
	_ = validate.Probes(pod, probes)
	a := plan.Compute(pod, o, probes)
	if b := plan.Compute(pod, o, probes); !proto.Equal(a, b) {
		t.Fatalf("not deterministic")
	}
	if err == nil {
		checkWellFormed(t, pod, a)
	}
}

// FuzzPlan drives validation and Compute with generated inputs; neither may
// panic, Compute must be deterministic, and plans of valid inputs must be
// well formed.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 2, 1, 3, 2, 1, 1, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("sidecars and init containers with unknown states"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, o, probes := generate(data)
		checkPlan(t, pod, o, probes)
	})
}

// FuzzPlanJSON feeds protojson PlanRequests (as grpcurl sends them).
func FuzzPlanJSON(f *testing.F) {
	f.Add([]byte(`{"pod":{"name":"demo","spec":{"containers":[{"name":"web","image":"busybox"}]}}}`))
	f.Add([]byte(`{"pod":{"name":"demo","spec":{"initContainers":[{"name":"i","image":"x","restartPolicy":"CONTAINER_RESTART_POLICY_ALWAYS"}],"containers":[{"name":"web","image":"busybox"}]}},` +
		`"observed":{"sandboxes":[{"id":"s1","state":"SANDBOX_STATE_READY","ip":"10.0.0.1"}],"containers":[{"id":"c1","name":"i","state":"CONTAINER_STATE_RUNNING","sandboxId":"s1"}]},` +
		`"probes":[{"name":"i","startup":"PROBE_RESULT_FAILURE"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req := &plannerv1.PlanRequest{}
		if protojson.Unmarshal(data, req) != nil {
			return
		}
		checkPlan(t, req.GetPod(), req.GetObserved(), req.GetProbes())
	})
}
