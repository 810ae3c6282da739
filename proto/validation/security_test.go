package validation_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

func i64(v int64) *int64 { return &v }
func bptr(v bool) *bool  { return &v }

func secPod() *syncpodv1.Pod {
	return &syncpodv1.Pod{Name: "p", Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "c", Image: "busybox:1.36"}}}}
}

// TestSecurityAndCommonSpecValid: a pod using every field of the security
// context, hooks and common spec correctly is accepted.
func TestSecurityAndCommonSpecValid(t *testing.T) {
	p := secPod()
	p.Spec.SecurityContext = &syncpodv1.PodSecurityContext{
		RunAsUser: i64(1000), RunAsGroup: i64(3000), RunAsNonRoot: bptr(true), FsGroup: i64(2000),
		SupplementalGroups: []int64{4000},
		SeccompProfile:     &syncpodv1.SeccompProfile{Type: syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_LOCALHOST, LocalhostProfile: "profiles/audit.json"},
		Sysctls:            []*syncpodv1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}},
	}
	p.Spec.ActiveDeadlineSeconds = i64(60)
	p.Spec.HostAliases = []*syncpodv1.HostAlias{{Ip: "10.0.0.1", Hostnames: []string{"foo.local", "bar"}}}
	p.Spec.DnsPolicy = syncpodv1.DNSPolicy_DNS_POLICY_NONE
	p.Spec.DnsConfig = &syncpodv1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}, Searches: []string{"ns1.svc.cluster-domain.example"},
		Options: []*syncpodv1.PodDNSConfigOption{{Name: "ndots", Value: new(string)}}}
	p.Spec.ShareProcessNamespace = bptr(true)
	p.Spec.RuntimeClassName = "runc"
	c := p.Spec.Containers[0]
	c.SecurityContext = &syncpodv1.SecurityContext{
		AllowPrivilegeEscalation: bptr(false), ReadOnlyRootFilesystem: bptr(true),
		Capabilities:   &syncpodv1.Capabilities{Add: []string{"NET_BIND_SERVICE"}, Drop: []string{"ALL"}},
		SeccompProfile: &syncpodv1.SeccompProfile{Type: syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_RUNTIME_DEFAULT},
	}
	c.Lifecycle = &syncpodv1.Lifecycle{
		PostStart: &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"true"}}}},
		PreStop:   &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_Sleep{Sleep: &syncpodv1.SleepAction{Seconds: 5}}},
	}
	c.TerminationMessagePath = "/tmp/msg"
	c.TerminationMessagePolicy = syncpodv1.TerminationMessagePolicy_TERMINATION_MESSAGE_POLICY_FALLBACK_TO_LOGS_ON_ERROR
	c.Stdin, c.StdinOnce, c.Tty = true, true, true
	if err := validation.Pod(p); err != nil {
		t.Fatal(err)
	}
}

// TestSecurityAndCommonSpecInvalid: every problem is reported at once,
// each with its field path.
func TestSecurityAndCommonSpecInvalid(t *testing.T) {
	p := secPod()
	p.Spec.HostNetwork = true
	p.Spec.HostPid = true
	p.Spec.ShareProcessNamespace = bptr(true)
	p.Spec.SecurityContext = &syncpodv1.PodSecurityContext{
		RunAsUser: i64(-1), SupplementalGroups: []int64{1 << 32},
		SeccompProfile:  &syncpodv1.SeccompProfile{Type: syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_LOCALHOST},
		Sysctls:         []*syncpodv1.Sysctl{{Name: "net.core.somaxconn", Value: "1"}, {Name: "Not A Sysctl"}},
		AppArmorProfile: &syncpodv1.AppArmorProfile{Type: syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_LOCALHOST},
		SeLinuxOptions:  &syncpodv1.SELinuxOptions{Level: "s0\nx"},
	}
	p.Spec.ActiveDeadlineSeconds = i64(0)
	p.Spec.HostAliases = []*syncpodv1.HostAlias{{Ip: "not-ip"}}
	p.Spec.DnsPolicy = syncpodv1.DNSPolicy_DNS_POLICY_NONE
	p.Spec.RuntimeClassName = "Bad_Class"
	c := p.Spec.Containers[0]
	c.SecurityContext = &syncpodv1.SecurityContext{
		Privileged: bptr(true), AllowPrivilegeEscalation: bptr(false), RunAsGroup: i64(-5),
		Capabilities:    &syncpodv1.Capabilities{Add: []string{"NET ADMIN"}},
		SeccompProfile:  &syncpodv1.SeccompProfile{LocalhostProfile: "x"},
		AppArmorProfile: &syncpodv1.AppArmorProfile{Type: syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED, LocalhostProfile: "x"},
	}
	c.Lifecycle = &syncpodv1.Lifecycle{
		PostStart: &syncpodv1.LifecycleHandler{},
		PreStop:   &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_HttpGet{HttpGet: &syncpodv1.HTTPGetAction{Port: 0, Scheme: "FTP"}}},
	}
	c.TerminationMessagePath = "relative/path"
	c.StdinOnce = true
	var got []string
	for _, fe := range fielderr.As(validation.Pod(p)) {
		got = append(got, fe.Path)
	}
	sort.Strings(got)
	want := []string{
		"spec.active_deadline_seconds",
		"spec.containers[0].lifecycle.post_start",
		"spec.containers[0].lifecycle.pre_stop.http_get.port",
		"spec.containers[0].lifecycle.pre_stop.http_get.scheme",
		"spec.containers[0].security_context.allow_privilege_escalation",
		"spec.containers[0].security_context.app_armor_profile.localhost_profile",
		"spec.containers[0].security_context.capabilities.add[0]",
		"spec.containers[0].security_context.run_as_group",
		"spec.containers[0].security_context.seccomp_profile.type",
		"spec.containers[0].stdin_once",
		"spec.containers[0].termination_message_path",
		"spec.dns_config.nameservers",
		"spec.host_aliases[0].hostnames",
		"spec.host_aliases[0].ip",
		"spec.runtime_class_name",
		"spec.security_context.app_armor_profile.localhost_profile",
		"spec.security_context.run_as_user",
		"spec.security_context.se_linux_options.level",
		"spec.security_context.seccomp_profile.localhost_profile",
		"spec.security_context.supplemental_groups[0]",
		"spec.security_context.sysctls[0].name",
		"spec.security_context.sysctls[1].name",
		"spec.share_process_namespace",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("paths:\n%s\nwant:\n%s\nerror: %v", strings.Join(got, "\n"), strings.Join(want, "\n"), validation.Pod(p))
	}
}

// TestHostUsersFalseForbidsHostNamespaces: a pod in its own user namespace
// (host_users false) may not share the node's network, PID or IPC
// namespace, as the API server refuses it; every such field is
// named at once. host_users true or unset allows them.
func TestHostUsersFalseForbidsHostNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hostUsers *bool
		want      []string
	}{
		{"unset", nil, nil},
		{"true", bptr(true), nil},
		{"false", bptr(false), []string{"spec.host_ipc", "spec.host_network", "spec.host_pid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := secPod()
			p.Spec.HostUsers = tc.hostUsers
			p.Spec.HostNetwork, p.Spec.HostPid, p.Spec.HostIpc = true, true, true
			var got []string
			for _, fe := range fielderr.As(validation.Pod(p)) {
				got = append(got, fe.Path)
				if fe.Message != "forbidden when host_users is false" {
					t.Errorf("%s: %q", fe.Path, fe.Message)
				}
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("fields %v, want %v", got, tc.want)
			}
		})
	}
	p := secPod()
	p.Spec.HostUsers = bptr(false)
	if err := validation.Pod(p); err != nil {
		t.Errorf("a pod in its own user namespace: %v", err)
	}
}
