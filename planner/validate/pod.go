package validate

import (
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/api/resource"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Bounds on sizes (see the package doc).
const (
	MaxContainers       = 64
	MaxEnv              = 1024
	MaxEnvNameLen       = 256
	MaxArgs             = 1024
	MaxPorts            = 64
	MaxRestartRules     = 20
	MaxExitCodes        = 255
	MaxAnnotationsBytes = 256 << 10
	MaxImageLen         = 4096
	MaxHeaders          = 64
)

// Pod checks a desired pod and returns every problem (an Errors) or nil.
func Pod(p *syncpodv1.Pod) error {
	var l list
	l.pod(p)
	return l.errs.Err()
}

func (l *list) pod(p *syncpodv1.Pod) {
	if p == nil {
		l.add("", "required")
		return
	}
	switch {
	case p.GetName() == "":
		l.add("name", "required")
	case !isDNS1123Subdomain(p.GetName()):
		l.add("name", "must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)")
	}
	if ns := p.GetNamespace(); ns != "" && !isDNS1123Label(ns) {
		l.add("namespace", "must be a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)")
	}
	if uid := p.GetUid(); uid != "" && !isUUID(uid) {
		l.add("uid", "must be an RFC 4122 UUID (8-4-4-4-12 hex digits)")
	}
	for _, k := range sortedKeys(p.GetLabels()) {
		if msg := qualifiedNameProblem(k); msg != "" {
			l.add(fmt.Sprintf("labels[%q]", k), "%s", msg)
		}
		if !isLabelValue(p.GetLabels()[k]) {
			l.add(fmt.Sprintf("labels[%q]", k), "value must be empty or at most 63 characters of letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
		}
	}
	total := 0
	for _, k := range sortedKeys(p.GetAnnotations()) {
		total += len(k) + len(p.GetAnnotations()[k])
		if msg := qualifiedNameProblem(k); msg != "" {
			l.add(fmt.Sprintf("annotations[%q]", k), "%s", msg)
		}
	}
	if total > MaxAnnotationsBytes {
		l.add("annotations", "total size %d bytes exceeds %d", total, MaxAnnotationsBytes)
	}
	if g := p.DeletionGracePeriodSeconds; g != nil && *g < 0 {
		l.add("deletion_grace_period_seconds", "must be >= 0")
	}
	if err := p.GetCreationTime().CheckValid(); p.CreationTime != nil && err != nil {
		l.add("creation_time", "invalid timestamp")
	}
	if err := p.GetDeletionTime().CheckValid(); p.DeletionTime != nil && err != nil {
		l.add("deletion_time", "invalid timestamp")
	}
	l.spec(p.GetSpec())
}

func (l *list) spec(s *syncpodv1.PodSpec) {
	if s == nil {
		l.add("spec", "required")
		return
	}
	if _, ok := syncpodv1.RestartPolicy_name[int32(s.GetRestartPolicy())]; !ok {
		l.add("spec.restart_policy", "unknown value %d", s.GetRestartPolicy())
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		l.add("spec.termination_grace_period_seconds", "must be >= 0")
	}
	if h := s.GetHostname(); h != "" && !isDNS1123Label(h) {
		l.add("spec.hostname", "must be a DNS-1123 label")
	}
	if len(s.GetContainers()) == 0 {
		l.add("spec.containers", "at least one container is required")
	}
	if n := len(s.GetContainers()) + len(s.GetInitContainers()); n > MaxContainers {
		l.add("spec", "%d containers (init and regular) exceed the limit of %d", n, MaxContainers)
	}
	names := map[string]string{}
	hostPorts := map[string]string{}
	check := func(field string, cs []*syncpodv1.Container, init bool) {
		for i, c := range cs {
			path := fmt.Sprintf("spec.%s[%d]", field, i)
			l.container(path, c, init, s.GetHostNetwork())
			if n := c.GetName(); n != "" {
				if prev, dup := names[n]; dup {
					l.add(path+".name", "duplicate name %q (also %s.name)", n, prev)
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
					l.add(pp+".host_port", "duplicate host port %d/%s on host_ip %q (also %s)", port.GetHostPort(), protocolName(port.GetProtocol()), port.GetHostIp(), prev)
				} else {
					hostPorts[key] = pp
				}
			}
		}
	}
	check("init_containers", s.GetInitContainers(), true)
	check("containers", s.GetContainers(), false)
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
		l.add(path, "required")
		return
	}
	switch {
	case c.GetName() == "":
		l.add(path+".name", "required")
	case !isDNS1123Label(c.GetName()):
		l.add(path+".name", "must be a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)")
	}
	switch img := c.GetImage(); {
	case img == "":
		l.add(path+".image", "required")
	case hasSpace(img):
		l.add(path+".image", "must not contain whitespace")
	case len(img) > MaxImageLen:
		l.add(path+".image", "longer than %d bytes", MaxImageLen)
	}
	if len(c.GetCommand()) > MaxArgs {
		l.add(path+".command", "more than %d entries", MaxArgs)
	}
	if len(c.GetArgs()) > MaxArgs {
		l.add(path+".args", "more than %d entries", MaxArgs)
	}
	if _, ok := syncpodv1.ImagePullPolicy_name[int32(c.GetImagePullPolicy())]; !ok {
		l.add(path+".image_pull_policy", "unknown value %d", c.GetImagePullPolicy())
	}
	if len(c.GetEnv()) > MaxEnv {
		l.add(path+".env", "%d entries exceed the limit of %d", len(c.GetEnv()), MaxEnv)
	}
	for i, e := range c.GetEnv() {
		p := fmt.Sprintf("%s.env[%d].name", path, i)
		switch n := e.GetName(); {
		case n == "":
			l.add(p, "required")
		case len(n) > MaxEnvNameLen:
			l.add(p, "longer than %d characters", MaxEnvNameLen)
		case !isEnvName(n):
			l.add(p, "must consist of letters, digits, '_', '-' or '.' and not start with a digit")
		}
	}
	l.ports(path, c.GetPorts(), hostNetwork)
	l.resources(path+".resources", c.GetResources())
	l.probe(path+".liveness_probe", c.GetLivenessProbe(), true)
	l.probe(path+".readiness_probe", c.GetReadinessProbe(), false)
	l.probe(path+".startup_probe", c.GetStartupProbe(), true)
	l.restart(path, c, init)
}

func (l *list) ports(path string, ports []*syncpodv1.ContainerPort, hostNetwork bool) {
	if len(ports) > MaxPorts {
		l.add(path+".ports", "%d entries exceed the limit of %d", len(ports), MaxPorts)
	}
	for i, p := range ports {
		pp := fmt.Sprintf("%s.ports[%d]", path, i)
		if n := p.GetName(); n != "" && !isPortName(n) {
			l.add(pp+".name", "must be an IANA service name (at most 15 lower-case letters, digits and '-', with a letter)")
		}
		if cp := p.GetContainerPort(); cp < 1 || cp > 65535 {
			l.add(pp+".container_port", "must be between 1 and 65535")
		}
		if hp := p.GetHostPort(); hp < 0 || hp > 65535 {
			l.add(pp+".host_port", "must be 0 or between 1 and 65535")
		} else if hostNetwork && hp != 0 && hp != p.GetContainerPort() {
			l.add(pp+".host_port", "must equal container_port (%d) with host_network", p.GetContainerPort())
		}
		if _, ok := syncpodv1.Protocol_name[int32(p.GetProtocol())]; !ok {
			l.add(pp+".protocol", "unknown value %d", p.GetProtocol())
		}
		if ip := p.GetHostIp(); ip != "" && net.ParseIP(ip) == nil {
			l.add(pp+".host_ip", "must be an IP address")
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
		q, err := resource.ParseQuantity(s)
		if err != nil {
			l.add(p, "must be a quantity such as \"250m\" or \"64Mi\": %v", err)
			return q, false
		}
		if q.Sign() < 0 {
			l.add(p, "must not be negative")
			return q, false
		}
		return q, true
	}
	reqCPU, okRC := parse(path+".requests.cpu", r.GetRequests().GetCpu())
	reqMem, okRM := parse(path+".requests.memory", r.GetRequests().GetMemory())
	limCPU, okLC := parse(path+".limits.cpu", r.GetLimits().GetCpu())
	limMem, okLM := parse(path+".limits.memory", r.GetLimits().GetMemory())
	if okRC && okLC && limCPU.Cmp(reqCPU) < 0 {
		l.add(path+".limits.cpu", "must be >= requests.cpu (%s)", r.GetRequests().GetCpu())
	}
	if okRM && okLM && limMem.Cmp(reqMem) < 0 {
		l.add(path+".limits.memory", "must be >= requests.memory (%s)", r.GetRequests().GetMemory())
	}
}

func (l *list) probe(path string, p *syncpodv1.Probe, restarts bool) {
	if p == nil {
		return
	}
	switch h := p.GetHandler().(type) {
	case nil:
		l.add(path, "exactly one handler (exec, tcp_socket or http_get) is required")
	case *syncpodv1.Probe_Exec:
		if len(h.Exec.GetCommand()) == 0 {
			l.add(path+".exec.command", "required")
		} else if len(h.Exec.GetCommand()) > MaxArgs {
			l.add(path+".exec.command", "more than %d entries", MaxArgs)
		}
	case *syncpodv1.Probe_TcpSocket:
		if port := h.TcpSocket.GetPort(); port < 1 || port > 65535 {
			l.add(path+".tcp_socket.port", "must be between 1 and 65535")
		}
	case *syncpodv1.Probe_HttpGet:
		g := h.HttpGet
		if port := g.GetPort(); port < 1 || port > 65535 {
			l.add(path+".http_get.port", "must be between 1 and 65535")
		}
		switch g.GetScheme() {
		case "", "HTTP", "HTTPS":
		default:
			l.add(path+".http_get.scheme", "must be HTTP or HTTPS")
		}
		if len(g.GetHttpHeaders()) > MaxHeaders {
			l.add(path+".http_get.http_headers", "more than %d entries", MaxHeaders)
		}
		for i, hd := range g.GetHttpHeaders() {
			if hd.GetName() == "" || hasSpace(hd.GetName()) {
				l.add(fmt.Sprintf("%s.http_get.http_headers[%d].name", path, i), "required, without whitespace")
			}
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
			l.add(path+"."+f.name, "must be >= 0")
		}
	}
	if restarts && p.GetSuccessThreshold() > 1 {
		l.add(path+".success_threshold", "must be 1 (or 0 for the default) for liveness and startup probes")
	}
	if g := p.TerminationGracePeriodSeconds; g != nil {
		switch {
		case !restarts:
			l.add(path+".termination_grace_period_seconds", "only allowed on liveness and startup probes")
		case *g < 1:
			l.add(path+".termination_grace_period_seconds", "must be >= 1")
		}
	}
}

func (l *list) restart(path string, c *syncpodv1.Container, init bool) {
	if _, ok := syncpodv1.ContainerRestartPolicy_name[int32(c.GetRestartPolicy())]; !ok {
		l.add(path+".restart_policy", "unknown value %d", c.GetRestartPolicy())
	}
	rules := c.GetRestartPolicyRules()
	if len(rules) == 0 {
		return
	}
	rp := path + ".restart_policy_rules"
	switch {
	case c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_UNSPECIFIED:
		l.add(rp, "only allowed together with a container restart_policy")
	case init && c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS:
		l.add(rp, "not allowed on a sidecar (init container with restart_policy ALWAYS)")
	}
	if len(rules) > MaxRestartRules {
		l.add(rp, "%d rules exceed the limit of %d", len(rules), MaxRestartRules)
	}
	for i, r := range rules {
		p := fmt.Sprintf("%s[%d]", rp, i)
		if r.GetAction() != syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART {
			l.add(p+".action", "must be CONTAINER_RESTART_RULE_ACTION_RESTART")
		}
		ec := r.GetExitCodes()
		if ec == nil {
			l.add(p+".exit_codes", "required")
			continue
		}
		switch ec.GetOperator() {
		case syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_NOT_IN:
		default:
			l.add(p+".exit_codes.operator", "must be EXIT_CODE_OPERATOR_IN or EXIT_CODE_OPERATOR_NOT_IN")
		}
		if len(ec.GetValues()) > MaxExitCodes {
			l.add(p+".exit_codes.values", "%d values exceed the limit of %d", len(ec.GetValues()), MaxExitCodes)
		}
		seen := map[int32]bool{}
		for j, v := range ec.GetValues() {
			vp := fmt.Sprintf("%s.exit_codes.values[%d]", p, j)
			switch {
			case v < 0 || v > 255:
				l.add(vp, "must be between 0 and 255")
			case seen[v]:
				l.add(vp, "duplicate exit code %d", v)
			}
			seen[v] = true
		}
	}
}
