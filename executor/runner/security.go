package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/proto/podresources"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// This file fills the security parts of the CRI sandbox and container
// configs as the kubelet does (kuberuntime generatePodSandboxLinuxConfig,
// determineEffectiveSecurityContext, verifyRunAsNonRoot, qos policy).

// DefaultReadonlyPaths are the /proc paths the kubelet asks the runtime to
// mount read-only in every container (securitycontext defaults).
var defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// baseMaskedPaths are the paths the kubelet asks the runtime to mask in
// every container; DefaultMaskedPaths adds the CPUs' thermal_throttle
// directories that exist on the node, as the kubelet does.
var baseMaskedPaths = []string{
	"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
	"/sys/devices/virtual/powercap",
}

// DefaultReadonlyPaths returns a fresh copy of the kubelet's default
// read-only paths.
func DefaultReadonlyPaths() []string { return append([]string(nil), defaultReadonlyPaths...) }

// DefaultMaskedPaths returns the kubelet's default masked paths for this
// node: the fixed list plus /sys/devices/system/cpu/cpuN/thermal_throttle
// for every possible CPU N where it exists, in CPU order. Like the
// kubelet, it reads the possible CPUs once and looks for the directories
// on every call (one stat per CPU, where reading /sys/devices/system/cpu
// for a glob cost about 0.3 ms of CPU per container start in a ten-pod
// burst).
func DefaultMaskedPaths() []string {
	out := append([]string(nil), baseMaskedPaths...)
	for _, n := range possibleCPUs() {
		p := "/sys/devices/system/cpu/cpu" + strconv.Itoa(n) + "/thermal_throttle"
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// possibleCPUs are the node's possible CPUs (read once), else 0 to
// NumCPU-1 when the kernel does not say.
var possibleCPUs = sync.OnceValue(func() []int {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if cpus, ok := parseCPUList(string(b)); err == nil && ok {
		return cpus
	}
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
})

// parseCPUList parses the kernel's CPU list format ("0-3,8,10-11"),
// ascending as the kernel writes it; ok is false for anything else.
func parseCPUList(s string) (cpus []int, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, false
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			return nil, false
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return nil, false
			}
		}
		for n := first; n <= last; n++ {
			cpus = append(cpus, n)
		}
	}
	return cpus, true
}

// namespaceOptions is the kubelet's NamespacesForPod: host network, PID
// and IPC when asked; one PID namespace for the pod with
// share_process_namespace, else one per container.
func namespaceOptions(pod *syncpodv1.Pod) *runtimeapi.NamespaceOption {
	s := pod.GetSpec()
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if s.GetHostNetwork() {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if s.GetHostIpc() {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case s.GetHostPid():
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case s.GetShareProcessNamespace():
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

func hasPrivileged(pod *syncpodv1.Pod) bool {
	for _, c := range allContainers(pod) {
		if c.GetSecurityContext().GetPrivileged() {
			return true
		}
	}
	return false
}

func allContainers(pod *syncpodv1.Pod) []*syncpodv1.Container {
	return append(append([]*syncpodv1.Container(nil), pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...)
}

// sandboxLinux fills the Linux part of the sandbox config as the kubelet's
// generatePodSandboxLinuxConfig: RuntimeDefault seccomp for the sandbox
// always, privileged when any container is, the pod's sysctls, user and
// group, namespaces, and fs_group then supplemental_groups.
func sandboxLinux(pod *syncpodv1.Pod) *runtimeapi.LinuxPodSandboxConfig {
	psc := pod.GetSpec().GetSecurityContext()
	lc := &runtimeapi.LinuxPodSandboxConfig{
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: namespaceOptions(pod),
			Privileged:       hasPrivileged(pod),
			Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		},
		Sysctls: map[string]string{},
	}
	for _, s := range psc.GetSysctls() {
		lc.Sysctls[s.GetName()] = s.GetValue()
	}
	if psc != nil && psc.RunAsUser != nil {
		lc.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: psc.GetRunAsUser()}
	}
	if psc != nil && psc.RunAsGroup != nil {
		lc.SecurityContext.RunAsGroup = &runtimeapi.Int64Value{Value: psc.GetRunAsGroup()}
	}
	lc.SecurityContext.SupplementalGroups = podGroups(psc)
	lc.SecurityContext.SelinuxOptions = seLinuxOption(psc.GetSeLinuxOptions())
	lc.Resources, lc.Overhead = sandboxResources(pod)
	return lc
}

// podGroups is fs_group (when set) followed by supplemental_groups.
func podGroups(psc *syncpodv1.PodSecurityContext) []int64 {
	var out []int64
	if psc != nil && psc.FsGroup != nil {
		out = append(out, psc.GetFsGroup())
	}
	return append(out, psc.GetSupplementalGroups()...)
}

// effectiveSecurity is the kubelet's DetermineEffectiveSecurityContext:
// the container's context with the pod's user, group, non-root and seccomp
// settings filled in where the container sets none. Nil when neither sets
// anything.
func effectiveSecurity(pod *syncpodv1.Pod, c *syncpodv1.Container) *syncpodv1.SecurityContext {
	psc := pod.GetSpec().GetSecurityContext()
	csc := c.GetSecurityContext()
	if csc == nil && psc == nil {
		return nil
	}
	out := &syncpodv1.SecurityContext{}
	if csc != nil {
		out = cloneSC(csc)
	}
	if psc == nil {
		return out
	}
	if out.RunAsUser == nil && psc.RunAsUser != nil {
		v := psc.GetRunAsUser()
		out.RunAsUser = &v
	}
	if out.RunAsGroup == nil && psc.RunAsGroup != nil {
		v := psc.GetRunAsGroup()
		out.RunAsGroup = &v
	}
	if out.RunAsNonRoot == nil && psc.RunAsNonRoot != nil {
		v := psc.GetRunAsNonRoot()
		out.RunAsNonRoot = &v
	}
	if out.SeccompProfile == nil && psc.GetSeccompProfile() != nil {
		out.SeccompProfile = psc.GetSeccompProfile()
	}
	if out.AppArmorProfile == nil && psc.GetAppArmorProfile() != nil {
		out.AppArmorProfile = psc.GetAppArmorProfile()
	}
	if out.SeLinuxOptions == nil && psc.GetSeLinuxOptions() != nil {
		out.SeLinuxOptions = psc.GetSeLinuxOptions()
	}
	return out
}

func cloneSC(s *syncpodv1.SecurityContext) *syncpodv1.SecurityContext {
	out := &syncpodv1.SecurityContext{
		RunAsUser: s.RunAsUser, RunAsGroup: s.RunAsGroup, RunAsNonRoot: s.RunAsNonRoot,
		ReadOnlyRootFilesystem: s.ReadOnlyRootFilesystem, Privileged: s.Privileged,
		Capabilities: s.Capabilities, AllowPrivilegeEscalation: s.AllowPrivilegeEscalation,
		SeccompProfile: s.SeccompProfile, AppArmorProfile: s.AppArmorProfile, SeLinuxOptions: s.SeLinuxOptions,
	}
	return out
}

// ImageUser is who an image runs as: its numeric UID when it has one,
// else its user name; both unset means root (the kubelet's getImageUser).
type ImageUser struct {
	UID      *int64
	Username string
}

func imageUser(img *runtimeapi.Image) ImageUser {
	if img != nil {
		if img.GetUid() != nil {
			v := img.GetUid().GetValue()
			return ImageUser{UID: &v}
		}
		if img.GetUsername() != "" {
			return ImageUser{Username: img.GetUsername()}
		}
	}
	zero := int64(0)
	return ImageUser{UID: &zero}
}

// VerifyRunAsNonRoot is the kubelet's verifyRunAsNonRoot: with an
// effective run_as_non_root, a run_as_user of 0, an image running as UID 0
// or an image user that is not numeric refuses the start with the
// kubelet's message.
func VerifyRunAsNonRoot(pod *syncpodv1.Pod, c *syncpodv1.Container, u ImageUser) error {
	sc := effectiveSecurity(pod, c)
	if sc == nil || !sc.GetRunAsNonRoot() {
		return nil
	}
	if sc.RunAsUser != nil {
		if sc.GetRunAsUser() == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podDesc(pod), c.GetName())
		}
		return nil
	}
	switch {
	case u.UID == nil && u.Username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", u.Username, podDesc(pod), c.GetName())
	case u.UID != nil && *u.UID == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.GetName())
	case u.UID != nil && (*u.UID < 0 || *u.UID > 1<<31-1):
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)) (pod: %q, container: %s)", *u.UID, 1<<31-1, podDesc(pod), c.GetName())
	}
	return nil
}

// seccompProfile is the kubelet's getSeccompProfile with its seccompDefault
// setting as fallbackRuntimeDefault: the container's profile, else the
// pod's, else RuntimeDefault or Unconfined. Localhost profiles are files
// under root.
func seccompProfile(pod *syncpodv1.Pod, c *syncpodv1.Container, root string, fallbackRuntimeDefault bool) *runtimeapi.SecurityProfile {
	p := c.GetSecurityContext().GetSeccompProfile()
	if p == nil {
		p = pod.GetSpec().GetSecurityContext().GetSeccompProfile()
	}
	switch p.GetType() {
	case syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_RUNTIME_DEFAULT:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_LOCALHOST:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(root, p.GetLocalhostProfile())}
	case syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_UNCONFINED:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
	if fallbackRuntimeDefault {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
}

// SecurityOptions are the node settings the container security context
// depends on.
type SecurityOptions struct {
	// SeccompRoot is the directory of Localhost seccomp profiles (the
	// kubelet's <root-dir>/seccomp).
	SeccompRoot string
	// SeccompDefault makes RuntimeDefault the default container profile
	// (the kubelet's seccompDefault); false means Unconfined.
	SeccompDefault bool
	// AppArmorEnabled says the host enforces AppArmor (HostAppArmorEnabled):
	// containers then default to the runtime's profile, and a pod asking
	// for a profile on a host without AppArmor is refused.
	AppArmorEnabled bool
}

// HostAppArmorEnabled reports whether the kernel enforces AppArmor, as the
// kubelet checks it (the apparmor module's "enabled" parameter is Y).
func HostAppArmorEnabled() bool {
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	return err == nil && strings.HasPrefix(string(b), "Y")
}

// errAppArmorNotEnabled is the kubelet's refusal of a pod that asks for an
// AppArmor profile on a host without AppArmor.
const errAppArmorNotEnabled = "Cannot enforce AppArmor: AppArmor is not enabled on the host"

// VerifyAppArmor refuses c of pod when its effective AppArmor profile is
// one the host cannot enforce (anything but Unconfined without AppArmor),
// with the kubelet's message.
func VerifyAppArmor(pod *syncpodv1.Pod, c *syncpodv1.Container, enabled bool) error {
	ap := effectiveSecurity(pod, c).GetAppArmorProfile()
	if enabled || ap == nil || ap.GetType() == syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED {
		return nil
	}
	return errors.New(errAppArmorNotEnabled)
}

// appArmorProfile is the CRI AppArmor profile of an effective profile, in
// the current field and the deprecated string older runtimes read (as the
// kubelet fills both): unset means the runtime's default where the host
// has AppArmor, nothing otherwise.
func appArmorProfile(ap *syncpodv1.AppArmorProfile, enabled bool) (*runtimeapi.SecurityProfile, string) {
	t := ap.GetType()
	if ap == nil {
		if !enabled {
			return nil, ""
		}
		t = syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_RUNTIME_DEFAULT
	}
	switch t {
	case syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, "unconfined"
	case syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_LOCALHOST:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ap.GetLocalhostProfile()},
			"localhost/" + ap.GetLocalhostProfile()
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, "runtime/default"
	}
}

// seLinuxOption is the CRI form of SELinux options; nil when unset.
func seLinuxOption(o *syncpodv1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.GetUser(), Role: o.GetRole(), Type: o.GetType(), Level: o.GetLevel()}
}

// containerSecurity is the kubelet's determineEffectiveSecurityContext for
// c of pod, with u the image's user.
func containerSecurity(pod *syncpodv1.Pod, c *syncpodv1.Container, u ImageUser, opts SecurityOptions) *runtimeapi.LinuxContainerSecurityContext {
	sc := effectiveSecurity(pod, c)
	out := &runtimeapi.LinuxContainerSecurityContext{}
	if sc != nil {
		if caps := sc.GetCapabilities(); caps != nil {
			out.Capabilities = &runtimeapi.Capability{
				AddCapabilities:  append([]string{}, caps.GetAdd()...),
				DropCapabilities: append([]string{}, caps.GetDrop()...),
			}
		}
		if sc.RunAsUser != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: sc.GetRunAsUser()}
		}
		if sc.RunAsGroup != nil {
			out.RunAsGroup = &runtimeapi.Int64Value{Value: sc.GetRunAsGroup()}
		}
		out.Privileged = sc.GetPrivileged()
		out.ReadonlyRootfs = sc.GetReadOnlyRootFilesystem()
		// AddNoNewPrivileges: only an explicit false sets no_new_privs.
		out.NoNewPrivs = sc.AllowPrivilegeEscalation != nil && !sc.GetAllowPrivilegeEscalation()
	}
	out.Seccomp = seccompProfile(pod, c, opts.SeccompRoot, opts.SeccompDefault)
	out.Apparmor, out.ApparmorProfile = appArmorProfile(sc.GetAppArmorProfile(), opts.AppArmorEnabled)
	out.SelinuxOptions = seLinuxOption(sc.GetSeLinuxOptions())
	if out.RunAsUser == nil {
		if u.UID != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: *u.UID}
		}
		out.RunAsUsername = u.Username
	}
	out.NamespaceOptions = namespaceOptions(pod)
	out.SupplementalGroups = podGroups(pod.GetSpec().GetSecurityContext())
	out.MaskedPaths = DefaultMaskedPaths()
	out.ReadonlyPaths = DefaultReadonlyPaths()
	return out
}

func sameQuantity(a, b string) bool {
	qa, err1 := resource.ParseQuantity(a)
	qb, err2 := resource.ParseQuantity(b)
	return err1 == nil && err2 == nil && qa.Cmp(qb) == 0
}

// memoryRequest is c's memory request in bytes, defaulted to its limit.
func memoryRequest(c *syncpodv1.Container) int64 {
	s := c.GetResources().GetRequests().GetMemory()
	if s == "" {
		s = c.GetResources().GetLimits().GetMemory()
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0
	}
	return q.Value()
}

// OOM score adjustments of the kubelet's qos policy.
const (
	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
)

// OOMScoreAdj is the kubelet's GetContainerOOMScoreAdjust for c of pod on a
// node with memCapacity bytes: -997 for Guaranteed pods, 1000 for
// BestEffort, and for Burstable 1000 minus the container's share of memory
// in thousandths (a sidecar never above the smallest regular container),
// kept within 3..999.
func OOMScoreAdj(pod *syncpodv1.Pod, c *syncpodv1.Container, init bool, memCapacity int64) int64 {
	switch podresources.QOS(pod) {
	case podresources.Guaranteed:
		return guaranteedOOMScoreAdj
	case podresources.BestEffort:
		return bestEffortOOMScoreAdj
	}
	if memCapacity <= 0 {
		memCapacity = 1
	}
	adj := 1000 - (1000*memoryRequest(c))/memCapacity
	if init && isSidecar(c) {
		var minReq int64
		for i, rc := range pod.GetSpec().GetContainers() {
			if m := memoryRequest(rc); i == 0 || m < minReq {
				minReq = m
			}
		}
		adj = min(adj, 1000-(1000*minReq)/memCapacity)
	}
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	if adj == bestEffortOOMScoreAdj {
		return adj - 1
	}
	return adj
}

// MachineMemory reads MemTotal from /proc/meminfo in bytes (0 when
// unreadable), the memory capacity the kubelet's OOM score uses.
func MachineMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`(?m)^MemTotal:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n * 1024
}
