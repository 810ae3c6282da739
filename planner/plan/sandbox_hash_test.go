package plan_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func sandboxFixture() *syncpodv1.Pod {
	uid, grp, fs := int64(1000), int64(3000), int64(2000)
	share := true
	opt := "2"
	p := mkPod(always, nil, ctr("web"), ctr("db"))
	p.Spec.Hostname = "box"
	p.Spec.SecurityContext = &syncpodv1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &grp, FsGroup: &fs,
		SupplementalGroups: []int64{4000}, Sysctls: []*syncpodv1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}},
		SeccompProfile: &syncpodv1.SeccompProfile{Type: syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_RUNTIME_DEFAULT}}
	p.Spec.HostAliases = []*syncpodv1.HostAlias{{Ip: "127.0.0.2", Hostnames: []string{"db.local"}}}
	p.Spec.DnsPolicy = syncpodv1.DNSPolicy_DNS_POLICY_NONE
	p.Spec.DnsConfig = &syncpodv1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"svc"},
		Options: []*syncpodv1.PodDNSConfigOption{{Name: "ndots", Value: &opt}}}
	p.Spec.ShareProcessNamespace = &share
	p.Spec.RuntimeClassName = "runc"
	p.Spec.Containers[0].Ports = []*syncpodv1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	return p
}

// TestSandboxHashGolden pins the hash of a pod that sets nothing and of one
// that sets everything: a change re-creates every sandbox on upgrade.
func TestSandboxHashGolden(t *testing.T) {
	for name, tc := range map[string]struct {
		pod  *syncpodv1.Pod
		want string
	}{
		"nil":   {nil, "502a845474ad8bb2"},
		"plain": {mkPod(always, nil, ctr("web")), "502a845474ad8bb2"},
		"full":  {sandboxFixture(), "1ea5dca8b53a8f46"},
	} {
		if got := plan.SandboxHash(tc.pod); got != tc.want {
			t.Errorf("SandboxHash(%s) = %q, want %q", name, got, tc.want)
		}
	}
}

// TestSandboxHashCoversPodLevelSettings: each pod-level setting the
// sandbox is created with changes the hash; container-level fields, labels,
// host_network (R-2.2.3 has its own check) and run_as_non_root do not.
func TestSandboxHashCoversPodLevelSettings(t *testing.T) {
	base := plan.SandboxHash(sandboxFixture())
	other := int64(1)
	no := false
	for name, tc := range map[string]struct {
		change  func(p *syncpodv1.Pod)
		changes bool
	}{
		"hostname":           {func(p *syncpodv1.Pod) { p.Spec.Hostname = "other" }, true},
		"runAsUser":          {func(p *syncpodv1.Pod) { p.Spec.SecurityContext.RunAsUser = &other }, true},
		"runAsUser unset":    {func(p *syncpodv1.Pod) { p.Spec.SecurityContext.RunAsUser = nil }, true},
		"runAsGroup":         {func(p *syncpodv1.Pod) { p.Spec.SecurityContext.RunAsGroup = &other }, true},
		"fsGroup":            {func(p *syncpodv1.Pod) { p.Spec.SecurityContext.FsGroup = &other }, true},
		"supplementalGroups": {func(p *syncpodv1.Pod) { p.Spec.SecurityContext.SupplementalGroups = nil }, true},
		"sysctl value":       {func(p *syncpodv1.Pod) { p.Spec.SecurityContext.Sysctls[0].Value = "2048" }, true},
		"seccomp":            {func(p *syncpodv1.Pod) { p.Spec.SecurityContext.SeccompProfile = nil }, true},
		"pod seLinuxOptions": {func(p *syncpodv1.Pod) {
			p.Spec.SecurityContext.SeLinuxOptions = &syncpodv1.SELinuxOptions{Type: "spc_t"}
		}, true},
		"pod appArmorProfile": {func(p *syncpodv1.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &syncpodv1.AppArmorProfile{Type: syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED}
		}, true},
		"no security context":    {func(p *syncpodv1.Pod) { p.Spec.SecurityContext = nil }, true},
		"hostAliases":            {func(p *syncpodv1.Pod) { p.Spec.HostAliases[0].Hostnames = []string{"x"} }, true},
		"dnsPolicy":              {func(p *syncpodv1.Pod) { p.Spec.DnsPolicy = syncpodv1.DNSPolicy_DNS_POLICY_DEFAULT }, true},
		"dnsConfig nameserver":   {func(p *syncpodv1.Pod) { p.Spec.DnsConfig.Nameservers = []string{"9.9.9.9"} }, true},
		"dnsConfig option value": {func(p *syncpodv1.Pod) { p.Spec.DnsConfig.Options[0].Value = nil }, true},
		"hostPID":                {func(p *syncpodv1.Pod) { p.Spec.HostPid = true }, true},
		"hostIPC":                {func(p *syncpodv1.Pod) { p.Spec.HostIpc = true }, true},
		"shareProcessNamespace":  {func(p *syncpodv1.Pod) { p.Spec.ShareProcessNamespace = &no }, true},
		"runtimeClassName":       {func(p *syncpodv1.Pod) { p.Spec.RuntimeClassName = "kata" }, true},
		"hostUsers false (R-27)": {func(p *syncpodv1.Pod) { p.Spec.HostUsers = &no }, true},
		"hostUsers true":         {func(p *syncpodv1.Pod) { p.Spec.HostUsers = proto.Bool(true) }, true},
		"a privileged container": {func(p *syncpodv1.Pod) {
			p.Spec.Containers[1].SecurityContext = &syncpodv1.SecurityContext{Privileged: proto.Bool(true)}
		}, true},
		"host port": {func(p *syncpodv1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 8081 }, true},
		"host port moved": {func(p *syncpodv1.Pod) {
			p.Spec.Containers[1].Ports, p.Spec.Containers[0].Ports = p.Spec.Containers[0].Ports, nil
		}, false},
		"container image": {func(p *syncpodv1.Pod) { p.Spec.Containers[0].Image = "nginx" }, false},
		"container port, no host": {func(p *syncpodv1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, &syncpodv1.ContainerPort{ContainerPort: 9090})
		}, false},
		"labels":                {func(p *syncpodv1.Pod) { p.Labels = map[string]string{"a": "b"} }, false},
		"hostNetwork (R-2.2.3)": {func(p *syncpodv1.Pod) { p.Spec.HostNetwork = true }, false},
		"runAsNonRoot":          {func(p *syncpodv1.Pod) { p.Spec.SecurityContext.RunAsNonRoot = proto.Bool(true) }, false},
		"restartPolicy":         {func(p *syncpodv1.Pod) { p.Spec.RestartPolicy = never }, false},
	} {
		p := sandboxFixture()
		tc.change(p)
		if got := plan.SandboxHash(p) != base; got != tc.changes {
			t.Errorf("%s: hash changed %v, want %v", name, got, tc.changes)
		}
	}
}

// adding an ephemeral container, even a privileged one, leaves the
// sandbox as it is: the running pod is not re-created.
func TestSandboxHashIgnoresEphemeralContainers(t *testing.T) {
	p := sandboxFixture()
	before := plan.SandboxHash(p)
	priv := true
	p.Spec.EphemeralContainers = []*syncpodv1.Container{{Name: "debugger", Image: "busybox", TargetContainerName: "web",
		SecurityContext: &syncpodv1.SecurityContext{Privileged: &priv}}}
	if got := plan.SandboxHash(p); got != before {
		t.Errorf("SandboxHash changed from %s to %s with an ephemeral container", before, got)
	}
}
