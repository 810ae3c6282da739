package plan

import (
	"slices"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// sandboxHashVersion starts the canonical encoding of SandboxHash; bump it
// only with a deliberate change of the encoding (which re-creates every
// sandbox that records a hash).
const sandboxHashVersion = "syncpod.sandbox-hash.v1"

// Field tags of the sandbox hash: the proto field numbers of PodSpec, and
// 200+ for what is gathered from the containers or a field number past a
// byte.
const (
	tagHostname         = 6
	tagPodSecurity      = 100
	tagHostAliases      = 102
	tagDNSPolicy        = 103
	tagDNSConfig        = 104
	tagHostPID          = 105
	tagHostIPC          = 106
	tagShareProcessNS   = 107
	tagRuntimeClassName = 108
	tagPrivileged       = 200
	tagHostPorts        = 201
	tagPodAppArmor      = 202
	tagPodSELinux       = 203
	tagHostUsers        = 204 // PodSpec field 420
)

// SandboxHash returns 16 lower-case hex digits of FNV-64a over a canonical
// encoding of the pod-level settings a sandbox is created with, so a pod
// update that changes one gets a new sandbox (SANDBOX_REASON_CONFIG_CHANGED,
// the kubelet's podSandboxChanged path; kubelet pods cannot change them).
//
// Hashed, each introduced by its tag: hostname; the pod security context
// (run_as_user, run_as_group, fs_group as presence then value,
// supplemental_groups, sysctls in order, seccomp type and localhost
// profile, then the AppArmor profile and SELinux options when set),
// host_aliases, dns_policy, dns_config, host_pid, host_ipc,
// share_process_namespace (presence then value), runtime_class_name,
// host_users (presence then value: the sandbox's user namespace, R-27);
// whether any container is privileged (the sandbox is then privileged);
// every host port mapping (container, host port, protocol, host ip), in
// container order. Each optional part only when set, so the hash of a pod
// that sets none of them is the same fixed value.
//
// Not hashed: host_network, which compares on its own (a new
// sandbox with an empty sandbox_id), run_as_non_root (a check at container
// start), labels and annotations (mutable without a new sandbox, as in
// Kubernetes), and every container-level field (the container's SpecHash).
func SandboxHash(pod *syncpodv1.Pod) string {
	b := sandboxHash(pod).hexBytes()
	return string(b[:])
}

func sandboxHash(pod *syncpodv1.Pod) hasher {
	spec := pod.GetSpec()
	h := hasher(fnvOffset64)
	h.raw(sandboxHashVersion)
	if s := spec.GetHostname(); s != "" {
		h.field(tagHostname)
		h.str(s)
	}
	if sc := spec.GetSecurityContext(); sc != nil {
		h.field(tagPodSecurity)
		h.optInt(sc.RunAsUser)
		h.optInt(sc.RunAsGroup)
		h.optInt(sc.FsGroup)
		groups := sc.GetSupplementalGroups()
		h.uvarint(uint64(len(groups)))
		for _, g := range groups {
			h.uvarint(uint64(g))
		}
		sysctls := sc.GetSysctls()
		h.uvarint(uint64(len(sysctls)))
		for _, s := range sysctls {
			h.str(s.GetName())
			h.str(s.GetValue())
		}
		h.seccomp(sc.GetSeccompProfile())
		hashAppArmor(&h, tagPodAppArmor, sc.GetAppArmorProfile())
		hashSELinux(&h, tagPodSELinux, sc.GetSeLinuxOptions())
	}
	if aliases := spec.GetHostAliases(); len(aliases) > 0 {
		h.field(tagHostAliases)
		h.uvarint(uint64(len(aliases)))
		for _, a := range aliases {
			h.str(a.GetIp())
			h.strs(a.GetHostnames())
		}
	}
	if p := spec.GetDnsPolicy(); p != syncpodv1.DNSPolicy_DNS_POLICY_UNSPECIFIED {
		h.field(tagDNSPolicy)
		h.int32(int32(p))
	}
	if dc := spec.GetDnsConfig(); dc != nil {
		h.field(tagDNSConfig)
		h.strs(dc.GetNameservers())
		h.strs(dc.GetSearches())
		h.uvarint(uint64(len(dc.GetOptions())))
		for _, o := range dc.GetOptions() {
			h.str(o.GetName())
			if o.Value != nil {
				h.byte(1)
				h.str(o.GetValue())
			} else {
				h.byte(0)
			}
		}
	}
	if spec.GetHostPid() {
		h.field(tagHostPID)
	}
	if spec.GetHostIpc() {
		h.field(tagHostIPC)
	}
	if spec != nil && spec.ShareProcessNamespace != nil {
		h.field(tagShareProcessNS)
		if spec.GetShareProcessNamespace() {
			h.byte(1)
		} else {
			h.byte(0)
		}
	}
	if s := spec.GetRuntimeClassName(); s != "" {
		h.field(tagRuntimeClassName)
		h.str(s)
	}
	if spec != nil && spec.HostUsers != nil {
		h.field(tagHostUsers)
		if spec.GetHostUsers() {
			h.byte(1)
		} else {
			h.byte(0)
		}
	}
	all := slices.Concat(spec.GetInitContainers(), spec.GetContainers())
	if slices.ContainsFunc(all, func(c *syncpodv1.Container) bool { return c.GetSecurityContext().GetPrivileged() }) {
		h.field(tagPrivileged)
	}
	for _, c := range all {
		for _, p := range c.GetPorts() {
			if p.GetHostPort() == 0 {
				continue
			}
			h.field(tagHostPorts)
			h.int32(p.GetContainerPort())
			h.int32(p.GetHostPort())
			h.protocol(p.GetProtocol())
			h.str(p.GetHostIp())
		}
	}
	return h
}
