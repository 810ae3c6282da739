package manifest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Conversion of the security context, lifecycle hooks and the rest of the
// common pod spec (activeDeadlineSeconds, hostAliases, DNS, host
// namespaces, runtime class, os, overhead, pod-level resources,
// termination messages,
// stdin/tty).

// specExtrasSchema are the pod spec keys this file converts.
func specExtrasSchema() map[string]*schema {
	seccomp := obj(map[string]*schema{"type": leaf(), "localhostProfile": leaf()})
	return map[string]*schema{
		"securityContext": obj(map[string]*schema{
			"runAsUser": leaf(), "runAsGroup": leaf(), "runAsNonRoot": leaf(),
			"supplementalGroups": listOf(leaf()), "fsGroup": leaf(), "fsGroupChangePolicy": leaf(), "seccompProfile": seccomp,
			"appArmorProfile": appArmorSchema(), "seLinuxOptions": seLinuxSchema(),
			"sysctls": listOf(obj(map[string]*schema{"name": leaf(), "value": leaf()})),
		}),
		"activeDeadlineSeconds": leaf(),
		"priority":              leaf(),
		"hostAliases":           listOf(obj(map[string]*schema{"ip": leaf(), "hostnames": listOf(leaf())})),
		"dnsPolicy":             leaf(),
		"dnsConfig": obj(map[string]*schema{
			"nameservers": listOf(leaf()), "searches": listOf(leaf()),
			"options": listOf(obj(map[string]*schema{"name": leaf(), "value": leaf()})),
		}),
		"hostPID":               leaf(),
		"hostIPC":               leaf(),
		"hostUsers":             leaf(),
		"shareProcessNamespace": leaf(),
		"runtimeClassName":      leaf(),
		"os":                    obj(map[string]*schema{"name": leaf()}),
		"overhead":              obj(map[string]*schema{"cpu": leaf(), "memory": leaf()}),
		"resources": obj(map[string]*schema{
			"requests": obj(map[string]*schema{"cpu": leaf(), "memory": leaf()}),
			"limits":   obj(map[string]*schema{"cpu": leaf(), "memory": leaf()}),
		}),
	}
}

// containerExtrasSchema are the container keys this file converts.
func containerExtrasSchema() map[string]*schema {
	handler := obj(map[string]*schema{
		"exec":      obj(map[string]*schema{"command": listOf(leaf())}),
		"httpGet":   obj(map[string]*schema{"path": leaf(), "port": leaf(), "host": leaf(), "scheme": leaf(), "httpHeaders": listOf(obj(map[string]*schema{"name": leaf(), "value": leaf()}))}),
		"tcpSocket": obj(map[string]*schema{"port": leaf(), "host": leaf()}),
		"sleep":     obj(map[string]*schema{"seconds": leaf()}),
	})
	return map[string]*schema{
		"securityContext": obj(map[string]*schema{
			"runAsUser": leaf(), "runAsGroup": leaf(), "runAsNonRoot": leaf(),
			"readOnlyRootFilesystem": leaf(), "privileged": leaf(), "allowPrivilegeEscalation": leaf(),
			"capabilities":    obj(map[string]*schema{"add": listOf(leaf()), "drop": listOf(leaf())}),
			"seccompProfile":  obj(map[string]*schema{"type": leaf(), "localhostProfile": leaf()}),
			"appArmorProfile": appArmorSchema(), "seLinuxOptions": seLinuxSchema(),
		}),
		"lifecycle":                obj(map[string]*schema{"postStart": handler, "preStop": handler, "stopSignal": leaf()}),
		"terminationMessagePath":   leaf(),
		"terminationMessagePolicy": leaf(),
		"stdin":                    leaf(),
		"stdinOnce":                leaf(),
		"tty":                      leaf(),
	}
}

// specExtras converts the common spec fields of kp into p.
func (c *converter) specExtras(kp *corev1.Pod, p *syncpodv1.PodSpec) {
	s := &kp.Spec
	p.ActiveDeadlineSeconds = s.ActiveDeadlineSeconds
	// the graceful node shutdown orders pods by it.
	p.Priority = s.Priority
	for _, a := range s.HostAliases {
		p.HostAliases = append(p.HostAliases, &syncpodv1.HostAlias{Ip: a.IP, Hostnames: a.Hostnames})
	}
	switch s.DNSPolicy {
	case "":
	case corev1.DNSClusterFirst:
		p.DnsPolicy = syncpodv1.DNSPolicy_DNS_POLICY_CLUSTER_FIRST
	case corev1.DNSClusterFirstWithHostNet:
		p.DnsPolicy = syncpodv1.DNSPolicy_DNS_POLICY_CLUSTER_FIRST_WITH_HOST_NET
	case corev1.DNSDefault:
		p.DnsPolicy = syncpodv1.DNSPolicy_DNS_POLICY_DEFAULT
	case corev1.DNSNone:
		p.DnsPolicy = syncpodv1.DNSPolicy_DNS_POLICY_NONE
	default:
		c.errorf("spec.dnsPolicy", "must be ClusterFirst, ClusterFirstWithHostNet, Default or None, got %q", s.DNSPolicy)
	}
	if d := s.DNSConfig; d != nil {
		p.DnsConfig = &syncpodv1.PodDNSConfig{Nameservers: d.Nameservers, Searches: d.Searches}
		for _, o := range d.Options {
			p.DnsConfig.Options = append(p.DnsConfig.Options, &syncpodv1.PodDNSConfigOption{Name: o.Name, Value: o.Value})
		}
	}
	p.HostPid, p.HostIpc = s.HostPID, s.HostIPC
	p.ShareProcessNamespace = s.ShareProcessNamespace
	p.HostUsers = s.HostUsers
	if s.RuntimeClassName != nil {
		p.RuntimeClassName = *s.RuntimeClassName
	}
	if s.OS != nil {
		// Checked against the node's OS by validation.
		p.Os = &syncpodv1.PodOS{Name: string(s.OS.Name)}
	}
	if s.Resources != nil {
		// Pod-level resources.
		p.Resources = c.resources("spec.resources", s.Resources)
	}
	if len(s.Overhead) > 0 {
		// It sizes the pod cgroup.
		p.Overhead = &syncpodv1.ResourceList{}
		if q, ok := s.Overhead[corev1.ResourceCPU]; ok {
			p.Overhead.Cpu = q.String()
		}
		if q, ok := s.Overhead[corev1.ResourceMemory]; ok {
			p.Overhead.Memory = q.String()
		}
	}
	if sc := s.SecurityContext; sc != nil {
		out := &syncpodv1.PodSecurityContext{
			RunAsUser: sc.RunAsUser, RunAsGroup: sc.RunAsGroup, RunAsNonRoot: sc.RunAsNonRoot,
			SupplementalGroups: sc.SupplementalGroups, FsGroup: sc.FSGroup,
			SeccompProfile:  c.seccomp("spec.securityContext.seccompProfile", sc.SeccompProfile),
			AppArmorProfile: c.appArmor("spec.securityContext.appArmorProfile", sc.AppArmorProfile),
			SeLinuxOptions:  seLinux(sc.SELinuxOptions),
		}
		if pol := sc.FSGroupChangePolicy; pol != nil && *pol != corev1.FSGroupChangeAlways && *pol != corev1.FSGroupChangeOnRootMismatch {
			// Checked as the API server checks it, and otherwise
			// without effect: the kubelet changes the ownership of the
			// volume kinds a node writes itself every time.
			c.errorf("spec.securityContext.fsGroupChangePolicy", "must be %q or %q, got %q",
				corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch, *pol)
		}
		for _, x := range sc.Sysctls {
			out.Sysctls = append(out.Sysctls, &syncpodv1.Sysctl{Name: x.Name, Value: x.Value})
		}
		p.SecurityContext = out
	}
}

func (c *converter) seccomp(path string, sp *corev1.SeccompProfile) *syncpodv1.SeccompProfile {
	if sp == nil {
		return nil
	}
	out := &syncpodv1.SeccompProfile{}
	if sp.LocalhostProfile != nil {
		out.LocalhostProfile = *sp.LocalhostProfile
	}
	switch sp.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		out.Type = syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_RUNTIME_DEFAULT
	case corev1.SeccompProfileTypeUnconfined:
		out.Type = syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_UNCONFINED
	case corev1.SeccompProfileTypeLocalhost:
		out.Type = syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_LOCALHOST
	default:
		c.errorf(path+".type", "must be RuntimeDefault, Unconfined or Localhost, got %q", sp.Type)
	}
	return out
}

func appArmorSchema() *schema {
	return obj(map[string]*schema{"type": leaf(), "localhostProfile": leaf()})
}

func seLinuxSchema() *schema {
	return obj(map[string]*schema{"user": leaf(), "role": leaf(), "type": leaf(), "level": leaf()})
}

func (c *converter) appArmor(path string, ap *corev1.AppArmorProfile) *syncpodv1.AppArmorProfile {
	if ap == nil {
		return nil
	}
	out := &syncpodv1.AppArmorProfile{}
	if ap.LocalhostProfile != nil {
		out.LocalhostProfile = *ap.LocalhostProfile
	}
	switch ap.Type {
	case corev1.AppArmorProfileTypeRuntimeDefault:
		out.Type = syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_RUNTIME_DEFAULT
	case corev1.AppArmorProfileTypeUnconfined:
		out.Type = syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED
	case corev1.AppArmorProfileTypeLocalhost:
		out.Type = syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_LOCALHOST
	default:
		c.errorf(path+".type", "must be RuntimeDefault, Unconfined or Localhost, got %q", ap.Type)
	}
	return out
}

func seLinux(o *corev1.SELinuxOptions) *syncpodv1.SELinuxOptions {
	if o == nil {
		return nil
	}
	return &syncpodv1.SELinuxOptions{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// containerExtras converts the container fields of kc into out.
func (c *converter) containerExtras(path string, kc *corev1.Container, out *syncpodv1.Container) {
	if sc := kc.SecurityContext; sc != nil {
		s := &syncpodv1.SecurityContext{
			RunAsUser: sc.RunAsUser, RunAsGroup: sc.RunAsGroup, RunAsNonRoot: sc.RunAsNonRoot,
			ReadOnlyRootFilesystem: sc.ReadOnlyRootFilesystem, Privileged: sc.Privileged,
			AllowPrivilegeEscalation: sc.AllowPrivilegeEscalation,
			SeccompProfile:           c.seccomp(path+".securityContext.seccompProfile", sc.SeccompProfile),
			AppArmorProfile:          c.appArmor(path+".securityContext.appArmorProfile", sc.AppArmorProfile),
			SeLinuxOptions:           seLinux(sc.SELinuxOptions),
		}
		if caps := sc.Capabilities; caps != nil {
			s.Capabilities = &syncpodv1.Capabilities{}
			for _, a := range caps.Add {
				s.Capabilities.Add = append(s.Capabilities.Add, string(a))
			}
			for _, d := range caps.Drop {
				s.Capabilities.Drop = append(s.Capabilities.Drop, string(d))
			}
		}
		out.SecurityContext = s
	}
	if lc := kc.Lifecycle; lc != nil {
		out.Lifecycle = &syncpodv1.Lifecycle{
			PostStart: c.hook(path+".lifecycle.postStart", lc.PostStart),
			PreStop:   c.hook(path+".lifecycle.preStop", lc.PreStop),
		}
		if lc.StopSignal != nil { // checked by validation
			out.Lifecycle.StopSignal = string(*lc.StopSignal)
		}
	}
	out.TerminationMessagePath = kc.TerminationMessagePath
	switch kc.TerminationMessagePolicy {
	case "":
	case corev1.TerminationMessageReadFile:
		out.TerminationMessagePolicy = syncpodv1.TerminationMessagePolicy_TERMINATION_MESSAGE_POLICY_FILE
	case corev1.TerminationMessageFallbackToLogsOnError:
		out.TerminationMessagePolicy = syncpodv1.TerminationMessagePolicy_TERMINATION_MESSAGE_POLICY_FALLBACK_TO_LOGS_ON_ERROR
	default:
		c.errorf(path+".terminationMessagePolicy", "must be File or FallbackToLogsOnError, got %q", kc.TerminationMessagePolicy)
	}
	out.Stdin, out.StdinOnce, out.Tty = kc.Stdin, kc.StdinOnce, kc.TTY
}

func (c *converter) hook(path string, h *corev1.LifecycleHandler) *syncpodv1.LifecycleHandler {
	if h == nil {
		return nil
	}
	out := &syncpodv1.LifecycleHandler{}
	switch {
	case h.Exec != nil:
		out.Action = &syncpodv1.LifecycleHandler_Exec{Exec: &syncpodv1.ExecAction{Command: h.Exec.Command}}
	case h.HTTPGet != nil:
		g := &syncpodv1.HTTPGetAction{Path: h.HTTPGet.Path, Port: c.port(path+".httpGet.port", h.HTTPGet.Port),
			Host: h.HTTPGet.Host, Scheme: string(h.HTTPGet.Scheme)}
		for _, hd := range h.HTTPGet.HTTPHeaders {
			g.HttpHeaders = append(g.HttpHeaders, &syncpodv1.HTTPHeader{Name: hd.Name, Value: hd.Value})
		}
		out.Action = &syncpodv1.LifecycleHandler_HttpGet{HttpGet: g}
	case h.TCPSocket != nil:
		out.Action = &syncpodv1.LifecycleHandler_TcpSocket{TcpSocket: &syncpodv1.TCPSocketAction{
			Port: c.port(path+".tcpSocket.port", h.TCPSocket.Port), Host: h.TCPSocket.Host}}
	case h.Sleep != nil:
		out.Action = &syncpodv1.LifecycleHandler_Sleep{Sleep: &syncpodv1.SleepAction{Seconds: h.Sleep.Seconds}}
	default:
		c.errorf(path, "one of exec, httpGet, tcpSocket or sleep is required")
	}
	return out
}

// closest returns the candidate nearest to s by edit distance (ignoring
// case), if it is near enough to be a likely misspelling: at most a third
// of the longer name's length, and at least 1 edit allowed.
func closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(lower(s), lower(c))
		if bestD < 0 || d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	limit := max(len(s), len(best)) / 3
	if bestD < 0 || bestD > max(limit, 1) {
		return ""
	}
	return best
}

func lower(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// unknownField is the issue of a key that is no field of the Kubernetes
// type at all: a misspelling, named with its likely intended field.
func unknownField(path, key string, known []string) Issue {
	msg := "unknown field"
	if near := closest(key, known); near != "" {
		msg = fmt.Sprintf("unknown field; did you mean `%s`?", near)
	}
	return Issue{Path: path, Message: msg, Severity: Error}
}
