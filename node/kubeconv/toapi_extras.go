package kubeconv

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/syncpod/syncpod/proto/k8snames"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The inverse of the manifest's podspec_extras.go for what is not a
// security context: DNS, host aliases, lifecycle hooks, termination
// messages, and the handlers hooks and probes share.

// restartPolicyToAPI is the pod's restart policy; unset stays unset (it
// is Always all the same), so that it converts back unset.
func restartPolicyToAPI(p syncpodv1.RestartPolicy) corev1.RestartPolicy {
	if p == syncpodv1.RestartPolicy_RESTART_POLICY_UNSPECIFIED {
		return ""
	}
	return corev1.RestartPolicy(k8snames.RestartPolicy(p))
}

// dnsPolicies spell the set DNS policies; unset is "".
var dnsPolicies = map[syncpodv1.DNSPolicy]corev1.DNSPolicy{
	syncpodv1.DNSPolicy_DNS_POLICY_CLUSTER_FIRST:               corev1.DNSClusterFirst,
	syncpodv1.DNSPolicy_DNS_POLICY_CLUSTER_FIRST_WITH_HOST_NET: corev1.DNSClusterFirstWithHostNet,
	syncpodv1.DNSPolicy_DNS_POLICY_DEFAULT:                     corev1.DNSDefault,
	syncpodv1.DNSPolicy_DNS_POLICY_NONE:                        corev1.DNSNone,
}

// terminationMessagePolicies spell the set termination message policies;
// unset is "".
var terminationMessagePolicies = map[syncpodv1.TerminationMessagePolicy]corev1.TerminationMessagePolicy{
	syncpodv1.TerminationMessagePolicy_TERMINATION_MESSAGE_POLICY_FILE:                      corev1.TerminationMessageReadFile,
	syncpodv1.TerminationMessagePolicy_TERMINATION_MESSAGE_POLICY_FALLBACK_TO_LOGS_ON_ERROR: corev1.TerminationMessageFallbackToLogsOnError,
}

func dnsConfigToAPI(d *syncpodv1.PodDNSConfig) *corev1.PodDNSConfig {
	if d == nil {
		return nil
	}
	out := &corev1.PodDNSConfig{Nameservers: d.GetNameservers(), Searches: d.GetSearches()}
	for _, o := range d.GetOptions() {
		out.Options = append(out.Options, corev1.PodDNSConfigOption{Name: o.GetName(), Value: o.Value})
	}
	return out
}

func hostAliasesToAPI(aliases []*syncpodv1.HostAlias) []corev1.HostAlias {
	var out []corev1.HostAlias
	for _, a := range aliases {
		out = append(out, corev1.HostAlias{IP: a.GetIp(), Hostnames: a.GetHostnames()})
	}
	return out
}

func lifecycleToAPI(l *syncpodv1.Lifecycle) *corev1.Lifecycle {
	if l == nil {
		return nil
	}
	out := &corev1.Lifecycle{PostStart: hookToAPI(l.GetPostStart()), PreStop: hookToAPI(l.GetPreStop())}
	if sig := l.GetStopSignal(); sig != "" {
		out.StopSignal = (*corev1.Signal)(&sig)
	}
	return out
}

func hookToAPI(h *syncpodv1.LifecycleHandler) *corev1.LifecycleHandler {
	if h == nil {
		return nil
	}
	out := &corev1.LifecycleHandler{}
	switch {
	case h.GetExec() != nil:
		out.Exec = execToAPI(h.GetExec())
	case h.GetHttpGet() != nil:
		out.HTTPGet = httpGetToAPI(h.GetHttpGet())
	case h.GetTcpSocket() != nil:
		out.TCPSocket = tcpSocketToAPI(h.GetTcpSocket())
	case h.GetSleep() != nil:
		out.Sleep = &corev1.SleepAction{Seconds: h.GetSleep().GetSeconds()}
	}
	return out
}

func execToAPI(e *syncpodv1.ExecAction) *corev1.ExecAction {
	return &corev1.ExecAction{Command: e.GetCommand()}
}

func tcpSocketToAPI(t *syncpodv1.TCPSocketAction) *corev1.TCPSocketAction {
	return &corev1.TCPSocketAction{Port: intstr.FromInt32(t.GetPort()), Host: t.GetHost()}
}

func httpGetToAPI(h *syncpodv1.HTTPGetAction) *corev1.HTTPGetAction {
	g := &corev1.HTTPGetAction{Path: h.GetPath(), Port: intstr.FromInt32(h.GetPort()), Host: h.GetHost(), Scheme: corev1.URIScheme(h.GetScheme())}
	for _, hd := range h.GetHttpHeaders() {
		g.HTTPHeaders = append(g.HTTPHeaders, corev1.HTTPHeader{Name: hd.GetName(), Value: hd.GetValue()})
	}
	return g
}
