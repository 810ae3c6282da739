package validation

import (
	"fmt"
	"net"
	"runtime"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Pod checks a desired pod and returns every problem (a fielderr.Errors,
// paths relative to the pod: "spec.containers[1].name") or nil. An empty
// uid and an empty namespace are valid (assigned and defaulted later).
func Pod(p *syncpodv1.Pod) error {
	var l list
	l.pod(p)
	return l.Err()
}

func (l *list) pod(p *syncpodv1.Pod) {
	if p == nil {
		l.Add("", "required")
		return
	}
	switch {
	case p.GetName() == "":
		l.Add("name", "required")
	default:
		l.check("name", NameProblem(p.GetName()))
	}
	if ns := p.GetNamespace(); ns != "" {
		l.check("namespace", NamespaceProblem(ns))
	}
	if uid := p.GetUid(); uid != "" {
		l.check("uid", UIDProblem(uid))
	}
	if p.GetSourceGeneration() < 0 {
		l.Add("source_generation", "must be >= 0 (0 when the pod's source has no generation)")
	}
	if n := len(p.GetLabels()); n > MaxLabels {
		l.Add("labels", "%d entries exceed the limit of %d", n, MaxLabels)
	} else {
		for _, k := range sortedKeys(p.GetLabels()) {
			if msg := qualifiedNameProblem(k); msg != "" {
				l.Add(MapPath("labels", k), "%s", msg)
			}
			if !isLabelValue(p.GetLabels()[k]) {
				l.Add(MapPath("labels", k), "value must be empty or at most 63 characters of letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
			}
		}
	}
	total := 0
	for _, k := range sortedKeys(p.GetAnnotations()) {
		total += len(k) + len(p.GetAnnotations()[k])
		if msg := qualifiedNameProblem(k); msg != "" {
			l.Add(MapPath("annotations", k), "%s", msg)
		}
	}
	if total > MaxAnnotationsBytes {
		l.Add("annotations", "total size %d bytes exceeds %d", total, MaxAnnotationsBytes)
	}
	if g := p.DeletionGracePeriodSeconds; g != nil && *g < 0 {
		l.Add("deletion_grace_period_seconds", "must be >= 0")
	}
	if err := p.GetCreationTime().CheckValid(); p.CreationTime != nil && err != nil {
		l.Add("creation_time", "invalid timestamp")
	}
	if err := p.GetDeletionTime().CheckValid(); p.DeletionTime != nil && err != nil {
		l.Add("deletion_time", "invalid timestamp")
	}
	l.serviceEnvironment(p.GetServiceEnvironment())
	l.spec(p.GetSpec(), p.GetAnnotations()[SourceAnnotation] == SourceAPI)
}

// serviceEnvironment checks the Service environment variables:
// each name a variable name, each NAME=value and all of them together
// within what one process's environment may hold.
func (l *list) serviceEnvironment(env map[string]string) {
	total := 0
	for _, k := range sortedKeys(env) {
		p := MapPath("service_environment", k)
		switch {
		case k == "":
			l.Add(p, "name required")
		case len(k) > MaxEnvNameLen:
			l.Add(p, "name longer than %d characters", MaxEnvNameLen)
		case !isEnvName(k):
			l.Add(p, "name must consist of letters, digits, '_', '-' or '.' and not start with a digit")
		}
		n := len(k) + 1 + len(env[k]) + 1
		if n > MaxArgLen {
			l.Add(p, "%d bytes exceed the kernel's limit of %d per environment string NAME=value (MAX_ARG_STRLEN)", n-1, MaxArgLen-1)
		}
		total += n
	}
	if total > MaxArgvBytes {
		l.Add("service_environment", "%d bytes, over the kernel's limit of %d for a whole environment (ARG_MAX)", total, MaxArgvBytes)
	}
}

func (l *list) spec(s *syncpodv1.PodSpec, fromAPI bool) {
	if s == nil {
		l.Add("spec", "required")
		return
	}
	if _, ok := syncpodv1.RestartPolicy_name[int32(s.GetRestartPolicy())]; !ok {
		l.Add("spec.restart_policy", "unknown value %d", s.GetRestartPolicy())
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		l.Add("spec.termination_grace_period_seconds", "must be >= 0")
	}
	if h := s.GetHostname(); h != "" && !isDNS1123Label(h) {
		l.Add("spec.hostname", "must be a DNS-1123 label")
	}
	if len(s.GetContainers()) == 0 {
		l.Add("spec.containers", "at least one container is required")
	}
	if n := len(s.GetContainers()) + len(s.GetInitContainers()) + len(s.GetEphemeralContainers()); n > MaxContainers {
		// Checking each of thousands of containers would only bury this.
		l.Add("spec", "%d containers (init, regular and ephemeral) exceed the limit of %d", n, MaxContainers)
		return
	}
	names := map[string]string{}
	hostPorts := map[string]string{}
	check := func(field string, cs []*syncpodv1.Container, init bool) {
		for i, c := range cs {
			path := fmt.Sprintf("spec.%s[%d]", field, i)
			l.container(path, c, init, s.GetHostNetwork())
			if n := c.GetName(); n != "" {
				if prev, dup := names[n]; dup {
					l.Add(path+".name", "duplicate name %s (also %s.name)", fielderr.Quote(n), prev)
				} else {
					names[n] = path
				}
			}
			for j, port := range c.GetPorts() {
				if port.GetHostPort() == 0 {
					continue
				}
				key := fmt.Sprintf("%s/%d/%s", port.GetHostIp(), port.GetHostPort(), protocolName(port.GetProtocol()))
				pp := fmt.Sprintf("%s.ports[%d]", path, j)
				if prev, dup := hostPorts[key]; dup {
					l.Add(pp+".host_port", "duplicate host port %d/%s on host_ip %s (also %s)", port.GetHostPort(), protocolName(port.GetProtocol()), fielderr.Quote(port.GetHostIp()), prev)
				} else {
					hostPorts[key] = pp
				}
			}
		}
	}
	check("init_containers", s.GetInitContainers(), true)
	check("containers", s.GetContainers(), false)
	l.ephemeral(s, names)
	l.specExtras(s)
	l.podVolumes(s, fromAPI)
	l.podOS(s.GetOs())
	if o := s.GetOverhead(); o != nil {
		l.quantity("spec.overhead.cpu", o.GetCpu())
		l.quantity("spec.overhead.memory", o.GetMemory())
	}
	l.podResources(s)
}

// NodeOS is the operating system of the node: a pod whose spec.os names
// another one is refused, as the kubelet refuses it at admission.
const NodeOS = runtime.GOOS

// podOS checks spec.os: "linux" or "windows" as the API server accepts,
// and the node's own OS to run here.
func (l *list) podOS(os *syncpodv1.PodOS) {
	if os == nil {
		return
	}
	switch n := os.GetName(); {
	case n == "":
		l.Add("spec.os.name", "required when spec.os is set")
	case n != "linux" && n != "windows":
		l.Add("spec.os.name", "must be \"linux\" or \"windows\", got %s", fielderr.Quote(n))
	case n != NodeOS:
		l.Add("spec.os.name", "is %s but the node runs %s: remove spec.os or set it to %s (the kubelet refuses such a pod at admission: PodOSNotSupported)",
			fielderr.Quote(n), fielderr.Quote(NodeOS), fielderr.Quote(NodeOS))
	}
}

func protocolName(p syncpodv1.Protocol) string {
	switch p {
	case syncpodv1.Protocol_PROTOCOL_UDP:
		return "UDP"
	case syncpodv1.Protocol_PROTOCOL_SCTP:
		return "SCTP"
	default:
		return "TCP"
	}
}

func (l *list) container(path string, c *syncpodv1.Container, init, hostNetwork bool) {
	if c == nil {
		l.Add(path, "required")
		return
	}
	switch {
	case c.GetName() == "":
		l.Add(path+".name", "required")
	default:
		l.check(path+".name", ContainerNameProblem(c.GetName()))
	}
	switch img := c.GetImage(); {
	case img == "":
		l.Add(path+".image", "required")
	case len(img) > MaxImageLen:
		l.Add(path+".image", "%d bytes exceed the limit of %d", len(img), MaxImageLen)
	case hasSpace(img):
		l.Add(path+".image", "must not contain whitespace")
	}
	l.maxLen(path+".working_dir", c.GetWorkingDir(), MaxPathLen)
	l.exec(path, c)
	if _, ok := syncpodv1.ImagePullPolicy_name[int32(c.GetImagePullPolicy())]; !ok {
		l.Add(path+".image_pull_policy", "unknown value %d", c.GetImagePullPolicy())
	}
	env := c.GetEnv()
	if len(env) > MaxEnv {
		l.Add(path+".env", "%d entries exceed the limit of %d", len(env), MaxEnv)
		env = nil
	}
	for i, e := range env {
		p := fmt.Sprintf("%s.env[%d].name", path, i)
		switch n := e.GetName(); {
		case n == "":
			l.Add(p, "required")
		case len(n) > MaxEnvNameLen:
			l.Add(p, "longer than %d characters", MaxEnvNameLen)
		case !isEnvName(n):
			l.Add(p, "%s", envNameRule)
		}
	}
	l.ports(path, c.GetPorts(), hostNetwork)
	l.resources(path+".resources", c.GetResources())
	l.resizePolicy(path, c.GetResizePolicy())
	l.probe(path+".liveness_probe", c.GetLivenessProbe(), true)
	l.probe(path+".readiness_probe", c.GetReadinessProbe(), false)
	l.probe(path+".startup_probe", c.GetStartupProbe(), true)
	l.restart(path, c)
	if c.GetTargetContainerName() != "" {
		l.Add(path+".target_container_name", "only allowed on an ephemeral container (spec.ephemeral_containers)")
	}
}

func (l *list) ports(path string, ports []*syncpodv1.ContainerPort, hostNetwork bool) {
	if len(ports) > MaxPorts {
		l.Add(path+".ports", "%d entries exceed the limit of %d", len(ports), MaxPorts)
		return
	}
	for i, p := range ports {
		pp := fmt.Sprintf("%s.ports[%d]", path, i)
		if n := p.GetName(); n != "" && !isPortName(n) {
			l.Add(pp+".name", "must be an IANA service name (at most 15 lower-case letters, digits and '-', with a letter)")
		}
		if cp := p.GetContainerPort(); cp < 1 || cp > 65535 {
			l.Add(pp+".container_port", "must be between 1 and 65535")
		}
		if hp := p.GetHostPort(); hp < 0 || hp > 65535 {
			l.Add(pp+".host_port", "must be 0 or between 1 and 65535")
		} else if hostNetwork && hp != 0 && hp != p.GetContainerPort() {
			l.Add(pp+".host_port", "must equal container_port (%d) with host_network", p.GetContainerPort())
		}
		if _, ok := syncpodv1.Protocol_name[int32(p.GetProtocol())]; !ok {
			l.Add(pp+".protocol", "unknown value %d", p.GetProtocol())
		}
		if ip := p.GetHostIp(); ip != "" && (len(ip) > MaxIPLen || net.ParseIP(ip) == nil) {
			l.Add(pp+".host_ip", "must be an IP address")
		}
	}
}

func (l *list) resources(path string, r *syncpodv1.ResourceRequirements) {
	if r == nil {
		return
	}
	parse := func(p, s string) (resource.Quantity, bool) {
		if s == "" {
			return resource.Quantity{}, false
		}
		if len(s) > MaxQuantityLen {
			l.Add(p, "%d bytes exceed the limit of %d", len(s), MaxQuantityLen)
			return resource.Quantity{}, false
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			l.Add(p, "must be a quantity such as \"250m\" or \"64Mi\": %v", err)
			return q, false
		}
		if q.Sign() < 0 {
			l.Add(p, "must not be negative")
			return q, false
		}
		return q, true
	}
	reqCPU, okRC := parse(path+".requests.cpu", r.GetRequests().GetCpu())
	reqMem, okRM := parse(path+".requests.memory", r.GetRequests().GetMemory())
	limCPU, okLC := parse(path+".limits.cpu", r.GetLimits().GetCpu())
	limMem, okLM := parse(path+".limits.memory", r.GetLimits().GetMemory())
	if okRC && okLC && limCPU.Cmp(reqCPU) < 0 {
		l.Add(path+".limits.cpu", "must be >= requests.cpu (%s)", fielderr.Quote(r.GetRequests().GetCpu()))
	}
	if okRM && okLM && limMem.Cmp(reqMem) < 0 {
		l.Add(path+".limits.memory", "must be >= requests.memory (%s)", fielderr.Quote(r.GetRequests().GetMemory()))
	}
}

func (l *list) probe(path string, p *syncpodv1.Probe, restarts bool) {
	if p == nil {
		return
	}
	switch h := p.GetHandler().(type) {
	case nil:
		l.Add(path, "exactly one handler (exec, tcp_socket, http_get or grpc) is required")
	case *syncpodv1.Probe_Exec:
		if len(h.Exec.GetCommand()) == 0 {
			l.Add(path+".exec.command", "required")
		} else {
			l.argv(path+".exec", argvPart{"command", h.Exec.GetCommand()})
		}
	case *syncpodv1.Probe_TcpSocket:
		if port := h.TcpSocket.GetPort(); port < 1 || port > 65535 {
			l.Add(path+".tcp_socket.port", "must be between 1 and 65535")
		}
		l.maxLen(path+".tcp_socket.host", h.TcpSocket.GetHost(), MaxNameLen)
	case *syncpodv1.Probe_Grpc:
		// the API server's port rule; the service name is free.
		if port := h.Grpc.GetPort(); port < 1 || port > 65535 {
			l.Add(path+".grpc.port", "must be between 1 and 65535")
		}
		l.maxLen(path+".grpc.service", h.Grpc.GetService(), MaxPathLen)
	case *syncpodv1.Probe_HttpGet:
		g := h.HttpGet
		if port := g.GetPort(); port < 1 || port > 65535 {
			l.Add(path+".http_get.port", "must be between 1 and 65535")
		}
		switch g.GetScheme() {
		case "", "HTTP", "HTTPS":
		default:
			l.Add(path+".http_get.scheme", "must be HTTP or HTTPS")
		}
		l.maxLen(path+".http_get.path", g.GetPath(), MaxPathLen)
		l.maxLen(path+".http_get.host", g.GetHost(), MaxNameLen)
		if len(g.GetHttpHeaders()) > MaxHeaders {
			l.Add(path+".http_get.http_headers", "%d entries exceed the limit of %d", len(g.GetHttpHeaders()), MaxHeaders)
			break
		}
		for i, hd := range g.GetHttpHeaders() {
			hp := fmt.Sprintf("%s.http_get.http_headers[%d]", path, i)
			if hd.GetName() == "" || hasSpace(hd.GetName()) {
				l.Add(hp+".name", "required, without whitespace")
			} else {
				l.maxLen(hp+".name", hd.GetName(), MaxHeaderNameLen)
			}
			l.maxLen(hp+".value", hd.GetValue(), MaxHeaderValueLen)
		}
	}
	for _, f := range []struct {
		name string
		v    int32
	}{
		{"initial_delay_seconds", p.GetInitialDelaySeconds()},
		{"timeout_seconds", p.GetTimeoutSeconds()},
		{"period_seconds", p.GetPeriodSeconds()},
		{"success_threshold", p.GetSuccessThreshold()},
		{"failure_threshold", p.GetFailureThreshold()},
	} {
		if f.v < 0 {
			l.Add(path+"."+f.name, "must be >= 0")
		}
	}
	if restarts && p.GetSuccessThreshold() > 1 {
		l.Add(path+".success_threshold", "must be 1 (or 0 for the default) for liveness and startup probes")
	}
	if g := p.TerminationGracePeriodSeconds; g != nil {
		switch {
		case !restarts:
			l.Add(path+".termination_grace_period_seconds", "only allowed on liveness and startup probes")
		case *g < 1:
			l.Add(path+".termination_grace_period_seconds", "must be >= 1")
		}
	}
}

func (l *list) restart(path string, c *syncpodv1.Container) {
	if _, ok := syncpodv1.ContainerRestartPolicy_name[int32(c.GetRestartPolicy())]; !ok {
		l.Add(path+".restart_policy", "unknown value %d", c.GetRestartPolicy())
	}
	rules := c.GetRestartPolicyRules()
	if len(rules) == 0 {
		return
	}
	rp := path + ".restart_policy_rules"
	// as the API server with RestartAllContainersOnContainerExits
	// (on by default): rules need a restart policy of the container's own;
	// init, sidecar and regular containers may have them, with either
	// action.
	if c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_UNSPECIFIED {
		l.Add(rp, "only allowed together with a container restart_policy")
	}
	if len(rules) > MaxRestartRules {
		l.Add(rp, "%d rules exceed the limit of %d", len(rules), MaxRestartRules)
		return
	}
	for i, r := range rules {
		p := fmt.Sprintf("%s[%d]", rp, i)
		switch r.GetAction() {
		case syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART,
			syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS:
		default:
			l.Add(p+".action", "must be CONTAINER_RESTART_RULE_ACTION_RESTART or CONTAINER_RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS")
		}
		ec := r.GetExitCodes()
		if ec == nil {
			l.Add(p+".exit_codes", "required")
			continue
		}
		switch ec.GetOperator() {
		case syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_NOT_IN:
		default:
			l.Add(p+".exit_codes.operator", "must be EXIT_CODE_OPERATOR_IN or EXIT_CODE_OPERATOR_NOT_IN")
		}
		if len(ec.GetValues()) > MaxExitCodes {
			l.Add(p+".exit_codes.values", "%d values exceed the limit of %d", len(ec.GetValues()), MaxExitCodes)
			continue
		}
		seen := map[int32]bool{}
		for j, v := range ec.GetValues() {
			vp := fmt.Sprintf("%s.exit_codes.values[%d]", p, j)
			switch {
			case v < 0 || v > 255:
				l.Add(vp, "must be between 0 and 255")
			case seen[v]:
				l.Add(vp, "duplicate exit code %d", v)
			}
			seen[v] = true
		}
	}
}

// resizePolicy checks a container's resize policies as the API server does
// each for "cpu" or "memory", once, with a known restart policy.
func (l *list) resizePolicy(path string, ps []*syncpodv1.ContainerResizePolicy) {
	seen := map[string]int{}
	for i, p := range ps {
		pp := fmt.Sprintf("%s.resize_policy[%d]", path, i)
		switch n := p.GetResourceName(); n {
		case "cpu", "memory":
			if prev, dup := seen[n]; dup {
				l.Add(pp+".resource_name", "%s is listed twice (also %s.resize_policy[%d])", fielderr.Quote(n), path, prev)
			}
			seen[n] = i
		default:
			l.Add(pp+".resource_name", "must be \"cpu\" or \"memory\", got %s", fielderr.Quote(n))
		}
		switch p.GetRestartPolicy() {
		case syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_UNSPECIFIED, syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_NOT_REQUIRED,
			syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER:
		default:
			l.Add(pp+".restart_policy", "unknown value %d", p.GetRestartPolicy())
		}
	}
}
