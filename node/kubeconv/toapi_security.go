package kubeconv

import (
	corev1 "k8s.io/api/core/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The inverse of the manifest's conversion of pod and container security
// contexts.

func podSecurityContextToAPI(sc *syncpodv1.PodSecurityContext) *corev1.PodSecurityContext {
	if sc == nil {
		return nil
	}
	out := &corev1.PodSecurityContext{
		RunAsUser: sc.RunAsUser, RunAsGroup: sc.RunAsGroup, RunAsNonRoot: sc.RunAsNonRoot,
		SupplementalGroups: sc.GetSupplementalGroups(), FSGroup: sc.FsGroup,
		SeccompProfile:  seccompToAPI(sc.GetSeccompProfile()),
		AppArmorProfile: appArmorToAPI(sc.GetAppArmorProfile()),
		SELinuxOptions:  seLinuxToAPI(sc.GetSeLinuxOptions()),
	}
	for _, s := range sc.GetSysctls() {
		out.Sysctls = append(out.Sysctls, corev1.Sysctl{Name: s.GetName(), Value: s.GetValue()})
	}
	return out
}

func securityContextToAPI(sc *syncpodv1.SecurityContext) *corev1.SecurityContext {
	if sc == nil {
		return nil
	}
	out := &corev1.SecurityContext{
		RunAsUser: sc.RunAsUser, RunAsGroup: sc.RunAsGroup, RunAsNonRoot: sc.RunAsNonRoot,
		ReadOnlyRootFilesystem: sc.ReadOnlyRootFilesystem, Privileged: sc.Privileged,
		AllowPrivilegeEscalation: sc.AllowPrivilegeEscalation,
		SeccompProfile:           seccompToAPI(sc.GetSeccompProfile()),
		AppArmorProfile:          appArmorToAPI(sc.GetAppArmorProfile()),
		SELinuxOptions:           seLinuxToAPI(sc.GetSeLinuxOptions()),
	}
	if c := sc.GetCapabilities(); c != nil {
		out.Capabilities = &corev1.Capabilities{}
		for _, a := range c.GetAdd() {
			out.Capabilities.Add = append(out.Capabilities.Add, corev1.Capability(a))
		}
		for _, d := range c.GetDrop() {
			out.Capabilities.Drop = append(out.Capabilities.Drop, corev1.Capability(d))
		}
	}
	return out
}

var seccompTypes = map[syncpodv1.SeccompProfileType]corev1.SeccompProfileType{
	syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_RUNTIME_DEFAULT: corev1.SeccompProfileTypeRuntimeDefault,
	syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_UNCONFINED:      corev1.SeccompProfileTypeUnconfined,
	syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_LOCALHOST:       corev1.SeccompProfileTypeLocalhost,
}

func seccompToAPI(sp *syncpodv1.SeccompProfile) *corev1.SeccompProfile {
	if sp == nil {
		return nil
	}
	out := &corev1.SeccompProfile{Type: seccompTypes[sp.GetType()]}
	if lp := sp.GetLocalhostProfile(); lp != "" {
		out.LocalhostProfile = &lp
	}
	return out
}

var appArmorTypes = map[syncpodv1.AppArmorProfileType]corev1.AppArmorProfileType{
	syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_RUNTIME_DEFAULT: corev1.AppArmorProfileTypeRuntimeDefault,
	syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED:      corev1.AppArmorProfileTypeUnconfined,
	syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_LOCALHOST:       corev1.AppArmorProfileTypeLocalhost,
}

func appArmorToAPI(ap *syncpodv1.AppArmorProfile) *corev1.AppArmorProfile {
	if ap == nil {
		return nil
	}
	out := &corev1.AppArmorProfile{Type: appArmorTypes[ap.GetType()]}
	if lp := ap.GetLocalhostProfile(); lp != "" {
		out.LocalhostProfile = &lp
	}
	return out
}

func seLinuxToAPI(o *syncpodv1.SELinuxOptions) *corev1.SELinuxOptions {
	if o == nil {
		return nil
	}
	return &corev1.SELinuxOptions{User: o.GetUser(), Role: o.GetRole(), Type: o.GetType(), Level: o.GetLevel()}
}
