package validate_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/validate"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func validPod() *syncpodv1.Pod {
	grace := int64(30)
	return &syncpodv1.Pod{
		Uid: "0b6a7c8e-1f2d-4e3a-9b4c-5d6e7f8a9b0c", Name: "web.demo", Namespace: "team-a",
		Labels:      map[string]string{"app": "web", "example.com/tier": "front_end"},
		Annotations: map[string]string{"example.com/note": "anything goes here"},
		Spec: &syncpodv1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			InitContainers: []*syncpodv1.Container{
				{Name: "proxy", Image: "envoy:1.30", RestartPolicy: syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS},
			},
			Containers: []*syncpodv1.Container{{
				Name: "web", Image: "busybox:1.36",
				Env:   []*syncpodv1.EnvVar{{Name: "HTTP_PORT", Value: "8080"}, {Name: "my.var-1", Value: ""}},
				Ports: []*syncpodv1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 18080}},
				Resources: &syncpodv1.ResourceRequirements{
					Requests: &syncpodv1.ResourceList{Cpu: "250m", Memory: "64Mi"},
					Limits:   &syncpodv1.ResourceList{Cpu: "1", Memory: "64Mi"},
				},
				LivenessProbe:  &syncpodv1.Probe{Handler: &syncpodv1.Probe_HttpGet{HttpGet: &syncpodv1.HTTPGetAction{Port: 8080, Path: "/healthz"}}, SuccessThreshold: 1},
				ReadinessProbe: &syncpodv1.Probe{Handler: &syncpodv1.Probe_TcpSocket{TcpSocket: &syncpodv1.TCPSocketAction{Port: 8080}}, SuccessThreshold: 3},
				RestartPolicy:  syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER,
				RestartPolicyRules: []*syncpodv1.ContainerRestartRule{{
					Action:    syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART,
					ExitCodes: &syncpodv1.ContainerRestartRuleOnExitCodes{Operator: syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, Values: []int32{42, 255}},
				}},
			}},
		},
	}
}

func paths(err error) []string {
	var out []string
	for _, fe := range validate.As(err) {
		out = append(out, fe.Path)
	}
	slices.Sort(out)
	return out
}

func TestPodValid(t *testing.T) {
	if err := validate.Pod(validPod()); err != nil {
		t.Fatalf("valid pod rejected: %v", err)
	}
	p := validPod()
	p.Uid, p.Namespace = "", ""
	if err := validate.Pod(p); err != nil {
		t.Fatalf("empty uid and namespace rejected: %v", err)
	}
}

func TestPodRules(t *testing.T) {
	web := func(p *syncpodv1.Pod) *syncpodv1.Container { return p.Spec.Containers[0] }
	neg := int64(-1)
	zero := int64(0)
	cases := []struct {
		name   string
		mutate func(p *syncpodv1.Pod)
		want   []string
	}{
		{"name required", func(p *syncpodv1.Pod) { p.Name = "" }, []string{"name"}},
		{"name DNS-1123 subdomain", func(p *syncpodv1.Pod) { p.Name = "Web" }, []string{"name"}},
		{"name at most 253", func(p *syncpodv1.Pod) { p.Name = strings.Repeat("a", 254) }, []string{"name"}},
		{"namespace DNS-1123 label", func(p *syncpodv1.Pod) { p.Namespace = "a.b" }, []string{"namespace"}},
		{"uid format", func(p *syncpodv1.Pod) { p.Uid = "not-a-uuid" }, []string{"uid"}},
		{"label key", func(p *syncpodv1.Pod) { p.Labels["-bad"] = "x" }, []string{`labels["-bad"]`}},
		{"label key prefix", func(p *syncpodv1.Pod) { p.Labels["Ex.com/a"] = "x" }, []string{`labels["Ex.com/a"]`}},
		{"label value", func(p *syncpodv1.Pod) { p.Labels["app"] = "has space" }, []string{`labels["app"]`}},
		{"label value length", func(p *syncpodv1.Pod) { p.Labels["app"] = strings.Repeat("v", 64) }, []string{`labels["app"]`}},
		{"annotation key", func(p *syncpodv1.Pod) { p.Annotations["a b"] = "" }, []string{`annotations["a b"]`}},
		{"annotations total size", func(p *syncpodv1.Pod) { p.Annotations["big"] = strings.Repeat("x", 256<<10) }, []string{"annotations"}},
		{"spec required", func(p *syncpodv1.Pod) { p.Spec = nil }, []string{"spec"}},
		{"at least one container", func(p *syncpodv1.Pod) { p.Spec.Containers = nil }, []string{"spec.containers"}},
		{"at most 64 containers", func(p *syncpodv1.Pod) {
			for i := range 64 {
				p.Spec.Containers = append(p.Spec.Containers, &syncpodv1.Container{Name: "c" + strings.Repeat("x", i%50) + strings.Repeat("y", i/50), Image: "i"})
			}
		}, []string{"spec"}},
		{"grace period >= 0", func(p *syncpodv1.Pod) { p.Spec.TerminationGracePeriodSeconds = &neg }, []string{"spec.termination_grace_period_seconds"}},
		{"grace period 0 is fine", func(p *syncpodv1.Pod) { p.Spec.TerminationGracePeriodSeconds = &zero }, nil},
		{"deletion grace >= 0", func(p *syncpodv1.Pod) { p.DeletionGracePeriodSeconds = &neg }, []string{"deletion_grace_period_seconds"}},
		{"restart policy enum", func(p *syncpodv1.Pod) { p.Spec.RestartPolicy = 9 }, []string{"spec.restart_policy"}},
		{"hostname", func(p *syncpodv1.Pod) { p.Spec.Hostname = "Host" }, []string{"spec.hostname"}},
		{"container name DNS-1123 label", func(p *syncpodv1.Pod) { web(p).Name = "Web" }, []string{"spec.containers[0].name"}},
		{"container name required", func(p *syncpodv1.Pod) { web(p).Name = "" }, []string{"spec.containers[0].name"}},
		{"container names unique across init and regular", func(p *syncpodv1.Pod) { web(p).Name = "proxy" }, []string{"spec.containers[0].name"}},
		{"image required", func(p *syncpodv1.Pod) { web(p).Image = "" }, []string{"spec.containers[0].image"}},
		{"image without whitespace", func(p *syncpodv1.Pod) { web(p).Image = "busy box" }, []string{"spec.containers[0].image"}},
		{"env name printable", func(p *syncpodv1.Pod) { web(p).Env[0].Name = "X\tY" }, []string{"spec.containers[0].env[0].name"}},
		// the Service environment is checked like env.
		{"service environment name", func(p *syncpodv1.Pod) {
			p.ServiceEnvironment = map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "X\tY": "v", "A=B": "v"}
		}, []string{`service_environment["A=B"]`, `service_environment["X\tY"]`}},
		{"service environment string size", func(p *syncpodv1.Pod) {
			p.ServiceEnvironment = map[string]string{"BIG": strings.Repeat("v", 128<<10)}
		}, []string{`service_environment["BIG"]`}},
		{"service environment total size", func(p *syncpodv1.Pod) {
			p.ServiceEnvironment = map[string]string{}
			for i := range 20 {
				p.ServiceEnvironment[fmt.Sprintf("S%d", i)] = strings.Repeat("v", 120<<10)
			}
		}, []string{"service_environment"}},
		{"env name charset", func(p *syncpodv1.Pod) { web(p).Env[1].Name = "A=B" }, []string{"spec.containers[0].env[1].name"}},
		{"env count", func(p *syncpodv1.Pod) {
			for range 1024 {
				web(p).Env = append(web(p).Env, &syncpodv1.EnvVar{Name: "X"})
			}
		}, []string{"spec.containers[0].env"}},
		{"container port range", func(p *syncpodv1.Pod) { web(p).Ports[0].ContainerPort = 0 }, []string{"spec.containers[0].ports[0].container_port"}},
		{"host port range", func(p *syncpodv1.Pod) { web(p).Ports[0].HostPort = 65536 }, []string{"spec.containers[0].ports[0].host_port"}},
		{"duplicate host port", func(p *syncpodv1.Pod) {
			p.Spec.InitContainers[0].Ports = []*syncpodv1.ContainerPort{{ContainerPort: 9, HostPort: 18080, Protocol: syncpodv1.Protocol_PROTOCOL_TCP}}
		}, []string{"spec.containers[0].ports[0].host_port"}},
		{"same host port other protocol is fine", func(p *syncpodv1.Pod) {
			web(p).Ports = append(web(p).Ports, &syncpodv1.ContainerPort{ContainerPort: 8080, HostPort: 18080, Protocol: syncpodv1.Protocol_PROTOCOL_UDP})
		}, nil},
		{"host network needs host_port == container_port", func(p *syncpodv1.Pod) { p.Spec.HostNetwork = true }, []string{"spec.containers[0].ports[0].host_port"}},
		{"host ip", func(p *syncpodv1.Pod) { web(p).Ports[0].HostIp = "localhost" }, []string{"spec.containers[0].ports[0].host_ip"}},
		{"port name", func(p *syncpodv1.Pod) { web(p).Ports[0].Name = "HTTP" }, []string{"spec.containers[0].ports[0].name"}},
		{"cpu quantity", func(p *syncpodv1.Pod) { web(p).Resources.Requests.Cpu = "lots" }, []string{"spec.containers[0].resources.requests.cpu"}},
		{"memory limit below request", func(p *syncpodv1.Pod) { web(p).Resources.Limits.Memory = "32Mi" }, []string{"spec.containers[0].resources.limits.memory"}},
		{"cpu limit below request", func(p *syncpodv1.Pod) { web(p).Resources.Limits.Cpu = "100m" }, []string{"spec.containers[0].resources.limits.cpu"}},
		{"negative quantity", func(p *syncpodv1.Pod) { web(p).Resources.Requests.Memory = "-1" }, []string{"spec.containers[0].resources.requests.memory"}},
		{"probe needs a handler", func(p *syncpodv1.Pod) { web(p).LivenessProbe.Handler = nil }, []string{"spec.containers[0].liveness_probe"}},
		{"exec command non-empty", func(p *syncpodv1.Pod) {
			web(p).StartupProbe = &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{}}}
		}, []string{"spec.containers[0].startup_probe.exec.command"}},
		{"probe port range", func(p *syncpodv1.Pod) { web(p).LivenessProbe.GetHttpGet().Port = 0 }, []string{"spec.containers[0].liveness_probe.http_get.port"}},
		{"probe timing >= 0", func(p *syncpodv1.Pod) { web(p).ReadinessProbe.PeriodSeconds = -1 }, []string{"spec.containers[0].readiness_probe.period_seconds"}},
		{"liveness success threshold 1", func(p *syncpodv1.Pod) { web(p).LivenessProbe.SuccessThreshold = 2 }, []string{"spec.containers[0].liveness_probe.success_threshold"}},
		{"probe grace >= 1", func(p *syncpodv1.Pod) { web(p).LivenessProbe.TerminationGracePeriodSeconds = &zero }, []string{"spec.containers[0].liveness_probe.termination_grace_period_seconds"}},
		{"readiness probe grace not allowed", func(p *syncpodv1.Pod) {
			g := int64(5)
			web(p).ReadinessProbe.TerminationGracePeriodSeconds = &g
		}, []string{"spec.containers[0].readiness_probe.termination_grace_period_seconds"}},
		{"rules need a container policy", func(p *syncpodv1.Pod) { web(p).RestartPolicy = 0 }, []string{"spec.containers[0].restart_policy_rules"}},
		{"rules on a sidecar are fine (R-7.1)", func(p *syncpodv1.Pod) {
			p.Spec.InitContainers[0].RestartPolicyRules = web(p).RestartPolicyRules
		}, nil},
		{"rules on a regular init container are fine", func(p *syncpodv1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER
			p.Spec.InitContainers[0].RestartPolicyRules = web(p).RestartPolicyRules
		}, nil},
		{"rule action set", func(p *syncpodv1.Pod) { web(p).RestartPolicyRules[0].Action = 0 }, []string{"spec.containers[0].restart_policy_rules[0].action"}},
		{"rule action unknown", func(p *syncpodv1.Pod) { web(p).RestartPolicyRules[0].Action = 99 }, []string{"spec.containers[0].restart_policy_rules[0].action"}},
		{"rule operator set", func(p *syncpodv1.Pod) { web(p).RestartPolicyRules[0].ExitCodes.Operator = 0 }, []string{"spec.containers[0].restart_policy_rules[0].exit_codes.operator"}},
		{"rule exit codes required", func(p *syncpodv1.Pod) { web(p).RestartPolicyRules[0].ExitCodes = nil }, []string{"spec.containers[0].restart_policy_rules[0].exit_codes"}},
		{"rule values 0-255", func(p *syncpodv1.Pod) { web(p).RestartPolicyRules[0].ExitCodes.Values = []int32{256} }, []string{"spec.containers[0].restart_policy_rules[0].exit_codes.values[0]"}},
		{"rule values unique", func(p *syncpodv1.Pod) { web(p).RestartPolicyRules[0].ExitCodes.Values = []int32{1, 1} }, []string{"spec.containers[0].restart_policy_rules[0].exit_codes.values[1]"}},
		{"env value over MAX_ARG_STRLEN", func(p *syncpodv1.Pod) { web(p).Env[0].Value = strings.Repeat("v", 1<<20) }, []string{"spec.containers[0].env[0].value"}},
		{"env value just fits MAX_ARG_STRLEN", func(p *syncpodv1.Pod) {
			web(p).Env[0].Value = strings.Repeat("v", 128<<10-len("HTTP_PORT=")-1)
		}, nil},
		{"argument over MAX_ARG_STRLEN", func(p *syncpodv1.Pod) { web(p).Args = []string{"ok", strings.Repeat("a", 128<<10)} }, []string{"spec.containers[0].args[1]"}},
		{"argv and env over ARG_MAX", func(p *syncpodv1.Pod) {
			for range 20 {
				web(p).Args = append(web(p).Args, strings.Repeat("a", 120<<10))
			}
		}, []string{"spec.containers[0]"}},
		{"command entries bounded", func(p *syncpodv1.Pod) { web(p).Command = make([]string, 1025) }, []string{"spec.containers[0].command"}},
		{"1 MB name", func(p *syncpodv1.Pod) { p.Name = strings.Repeat("a", 1<<20) }, []string{"name"}},
		{"1 MB container name", func(p *syncpodv1.Pod) { web(p).Name = strings.Repeat("a", 1<<20) }, []string{"spec.containers[0].name"}},
		{"10,000 containers", func(p *syncpodv1.Pod) {
			for i := range 10000 {
				p.Spec.Containers = append(p.Spec.Containers, &syncpodv1.Container{Name: fmt.Sprintf("c%d", i), Image: "i"})
			}
		}, []string{"spec"}},
		{"working dir bounded", func(p *syncpodv1.Pod) { web(p).WorkingDir = "/" + strings.Repeat("d", 5000) }, []string{"spec.containers[0].working_dir"}},
		{"labels bounded", func(p *syncpodv1.Pod) {
			for i := range 300 {
				p.Labels[fmt.Sprintf("l%d", i)] = "v"
			}
		}, []string{"labels"}},
		{"probe header value bounded", func(p *syncpodv1.Pod) {
			web(p).LivenessProbe.GetHttpGet().HttpHeaders = []*syncpodv1.HTTPHeader{{Name: "X", Value: strings.Repeat("v", 9000)}}
		}, []string{"spec.containers[0].liveness_probe.http_get.http_headers[0].value"}},
		{"quantity bounded", func(p *syncpodv1.Pod) { web(p).Resources.Requests.Cpu = strings.Repeat("1", 100) }, []string{"spec.containers[0].resources.requests.cpu"}},
		{"rule values at most 255", func(p *syncpodv1.Pod) {
			var vs []int32
			for i := range 256 {
				vs = append(vs, int32(i%256))
			}
			vs[255] = 255
			web(p).RestartPolicyRules[0].ExitCodes.Values = vs[:256]
		}, []string{"spec.containers[0].restart_policy_rules[0].exit_codes.values"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := validPod()
			tc.mutate(p)
			err := validate.Pod(p)
			if got := paths(err); !slices.Equal(got, tc.want) {
				t.Errorf("paths = %q, want %q (err: %v)", got, tc.want, err)
			}
			if tc.want != nil && !errors.Is(err, validate.ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
		})
	}
}

func TestPodAllErrorsAtOnce(t *testing.T) {
	p := validPod()
	p.Name = ""
	p.Spec.Containers[0].Image = ""
	p.Spec.Containers[0].Ports[0].ContainerPort = -5
	p.Spec.InitContainers[0].Name = "Bad"
	err := validate.Pod(p)
	want := []string{"name", "spec.containers[0].image", "spec.containers[0].ports[0].container_port", "spec.init_containers[0].name"}
	if got := paths(err); !slices.Equal(got, want) {
		t.Fatalf("paths = %q, want %q", got, want)
	}
	if !strings.Contains(err.Error(), "spec.containers[0].image: required") || !strings.HasPrefix(err.Error(), "4 invalid field(s)") {
		t.Errorf("message %q does not list the problems", err)
	}
}

func TestObserved(t *testing.T) {
	valid := func() *syncpodv1.ObservedPod {
		return &syncpodv1.ObservedPod{
			Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, CreatedAt: &timestamppb.Timestamp{Seconds: 100}}},
			Containers: []*syncpodv1.ObservedContainer{
				{Id: "c1", Name: "web", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SandboxId: "s1"},
				{Id: "c2", Name: "web", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED},
			},
		}
	}
	cases := []struct {
		name   string
		mutate func(o *syncpodv1.ObservedPod)
		want   []string
	}{
		{"valid", func(*syncpodv1.ObservedPod) {}, nil},
		{"sandbox id required", func(o *syncpodv1.ObservedPod) { o.Sandboxes[0].Id = ""; o.Containers[0].SandboxId = "" }, []string{"sandboxes[0].id"}},
		{"ids unique across sandboxes and containers", func(o *syncpodv1.ObservedPod) { o.Containers[1].Id = "s1" }, []string{"containers[1].id"}},
		{"container id unique", func(o *syncpodv1.ObservedPod) { o.Containers[1].Id = "c1" }, []string{"containers[1].id"}},
		{"container name required", func(o *syncpodv1.ObservedPod) { o.Containers[0].Name = "" }, []string{"containers[0].name"}},
		{"sandbox state set", func(o *syncpodv1.ObservedPod) { o.Sandboxes[0].State = 0 }, []string{"sandboxes[0].state"}},
		{"container state set", func(o *syncpodv1.ObservedPod) { o.Containers[1].State = 0 }, []string{"containers[1].state"}},
		{"container state known", func(o *syncpodv1.ObservedPod) { o.Containers[1].State = 17 }, []string{"containers[1].state"}},
		{"sandbox_id names a sandbox", func(o *syncpodv1.ObservedPod) { o.Containers[1].SandboxId = "s9" }, []string{"containers[1].sandbox_id"}},
		{"timestamps valid", func(o *syncpodv1.ObservedPod) { o.Containers[0].CreatedAt = &timestamppb.Timestamp{Nanos: -1} }, []string{"containers[0].created_at"}},
		{"restart_count >= 0", func(o *syncpodv1.ObservedPod) { o.Containers[0].RestartCount = -5 }, []string{"containers[0].restart_count"}},
		{"message bounded", func(o *syncpodv1.ObservedPod) { o.Containers[0].Message = strings.Repeat("m", 65<<10) }, []string{"containers[0].message"}},
		{"ids bounded", func(o *syncpodv1.ObservedPod) { o.Containers[1].Id = strings.Repeat("c", 300) }, []string{"containers[1].id"}},
		{"containers bounded", func(o *syncpodv1.ObservedPod) {
			o.Containers = make([]*syncpodv1.ObservedContainer, 8193)
		}, []string{"containers"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.mutate(o)
			if got := paths(validate.Observed(o)); !slices.Equal(got, tc.want) {
				t.Errorf("paths = %q, want %q", got, tc.want)
			}
		})
	}
	if err := validate.Observed(nil); err != nil {
		t.Errorf("nil observed rejected: %v", err)
	}
}

func TestProbesAndRequest(t *testing.T) {
	pod := validPod()
	probes := []*syncpodv1.ContainerProbeResults{
		{Name: "web", Liveness: syncpodv1.ProbeResult_PROBE_RESULT_FAILURE},
		{Name: "proxy", ContainerId: "c1"},
		{Name: "web"},
		{Name: "ghost"},
		{Name: "web", ContainerId: "c1", Startup: 7},
	}
	want := []string{"[2]", "[3].name", "[4].startup"}
	if got := paths(validate.Probes(pod, probes)); !slices.Equal(got, want) {
		t.Errorf("Probes paths = %q, want %q", got, want)
	}

	o := &syncpodv1.ObservedPod{Uid: "0b6a7c8e-1f2d-4e3a-9b4c-000000000000", Name: "other", Namespace: "default",
		Containers: []*syncpodv1.ObservedContainer{{Name: "web", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING}}}
	bad := proto.Clone(pod).(*syncpodv1.Pod)
	bad.Spec.Containers[0].Image = ""
	err := validate.Request(bad, o, probes[:4])
	want = []string{"observed.containers[0].id", "observed.name", "observed.namespace", "observed.uid", "pod.spec.containers[0].image", "probes[2]", "probes[3].name"}
	if got := paths(err); !slices.Equal(got, want) {
		t.Errorf("Request paths = %q, want %q", got, want)
	}
	if got := paths(validate.Request(nil, nil, nil)); !slices.Equal(got, []string{"pod"}) {
		t.Errorf("nil pod: %q", got)
	}
	noUID := validPod()
	noUID.Uid = ""
	if err := validate.Request(noUID, nil, nil); err != nil {
		t.Errorf("Plan allows an empty uid: %v", err)
	}
}

// TestMessagesNeverEchoHugeInput: an error message never sends a 1 MB
// input back. Every message and path stays small.
func TestMessagesNeverEchoHugeInput(t *testing.T) {
	huge := strings.Repeat("X", 1<<20)
	p := validPod()
	p.Name, p.Namespace, p.Uid = huge, huge, huge
	p.Labels[huge] = huge
	p.Annotations[huge] = "a"
	web := p.Spec.Containers[0]
	web.Name, web.Image, web.WorkingDir = huge, huge, huge
	web.Resources.Requests.Cpu = huge
	p.Spec.InitContainers[0].Name = huge
	o := &syncpodv1.ObservedPod{Uid: huge, Name: huge, Containers: []*syncpodv1.ObservedContainer{{Id: huge, Name: huge, SandboxId: huge, State: 2}}}
	probes := []*syncpodv1.ContainerProbeResults{{Name: huge, ContainerId: huge}, {Name: huge, ContainerId: huge}}
	err := validate.Request(p, o, probes)
	fields := validate.As(err)
	if len(fields) < 10 {
		t.Fatalf("only %d problems found: %v", len(fields), err)
	}
	for _, fe := range fields {
		if len(fe.Path) > 200 || len(fe.Message) > 400 {
			t.Errorf("%d-byte path / %d-byte message for %.80s", len(fe.Path), len(fe.Message), fe.Error())
		}
	}
}

// a reference to a pod (GetPod, DeletePod, streams) takes every
// name a pod may have: a 200-character name without a dot is no bad
// argument, so the node agent never asks again and again for a pod the
// planner would not name.
func TestRefTakesEveryPodName(t *testing.T) {
	long := "pod-update-activedeadlineseconds-" + strings.Repeat("x", 167)
	if err := validate.Ref(&plannerv1.PodRef{Name: long, Namespace: "e2e-tests-pods-1234"}); err != nil {
		t.Errorf("Ref of a %d-character name: %v", len(long), err)
	}
	p := validPod()
	p.Name = long
	if err := validate.Pod(p); err != nil {
		t.Errorf("Pod named with %d characters: %v", len(long), err)
	}
	if err := validate.Ref(&plannerv1.PodRef{Name: strings.Repeat("a", 254)}); err == nil {
		t.Error("Ref of a 254-character name accepted")
	}
}
