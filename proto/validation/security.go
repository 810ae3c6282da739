package validation

import (
	"fmt"
	"net"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Checks of the security context, lifecycle hooks and the rest of the
// common pod spec (Kubernetes' own rules where they apply to one node).

// Limits of the common spec, as Kubernetes sets them.
const (
	MaxDNSNameservers = 3
	MaxDNSSearches    = 32
	MaxDNSOptions     = 32
	MaxHostAliases    = 128
	MaxSysctls        = 128
	MaxCapabilities   = 64
	maxUserID         = 1<<31 - 1
)

// sysctlName is Kubernetes' sysctl name syntax (dots or slashes between
// segments). It and capName are compiled at their first use (see
// configKeyRE).
var sysctlName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)
})

// capName is a capability name as Kubernetes writes them: letters, digits
// and '_' (an optional CAP_ prefix is accepted by the runtimes).
var capName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`) })

func (l *list) specExtras(s *syncpodv1.PodSpec) {
	l.podSecurity("spec.security_context", s.GetSecurityContext(), s)
	if d := s.ActiveDeadlineSeconds; d != nil && *d < 1 {
		l.Add("spec.active_deadline_seconds", "must be >= 1")
	}
	aliases := s.GetHostAliases()
	if len(aliases) > MaxHostAliases {
		l.Add("spec.host_aliases", "%d entries exceed the limit of %d", len(aliases), MaxHostAliases)
		aliases = nil
	}
	for i, a := range aliases {
		p := fmt.Sprintf("spec.host_aliases[%d]", i)
		if ip := a.GetIp(); len(ip) > MaxIPLen || net.ParseIP(ip) == nil {
			l.Add(p+".ip", "must be an IP address")
		}
		if len(a.GetHostnames()) == 0 {
			l.Add(p+".hostnames", "at least one is required")
		}
		for j, h := range a.GetHostnames() {
			if !isDNS1123Subdomain(h) {
				l.Add(fmt.Sprintf("%s.hostnames[%d]", p, j), "must be a DNS-1123 subdomain")
			}
		}
	}
	if _, ok := syncpodv1.DNSPolicy_name[int32(s.GetDnsPolicy())]; !ok {
		l.Add("spec.dns_policy", "unknown value %d", s.GetDnsPolicy())
	}
	l.dnsConfig(s)
	if s.GetHostPid() && s.GetShareProcessNamespace() {
		l.Add("spec.share_process_namespace", "may not be true together with host_pid")
	}
	if s.HostUsers != nil && !s.GetHostUsers() {
		for _, host := range []struct {
			field string
			on    bool
		}{{"spec.host_network", s.GetHostNetwork()}, {"spec.host_pid", s.GetHostPid()}, {"spec.host_ipc", s.GetHostIpc()}} {
			if host.on {
				l.Add(host.field, "forbidden when host_users is false")
			}
		}
	}
	if rc := s.GetRuntimeClassName(); rc != "" && !isDNS1123Subdomain(rc) {
		l.Add("spec.runtime_class_name", "must be a DNS-1123 subdomain")
	}
	each := func(field string, cs []*syncpodv1.Container) {
		for i, c := range cs {
			p := fmt.Sprintf("spec.%s[%d]", field, i)
			l.containerSecurity(p+".security_context", c.GetSecurityContext())
			l.lifecycle(p+".lifecycle", c.GetLifecycle(), s.GetOs())
			if tp := c.GetTerminationMessagePath(); tp != "" {
				if !path.IsAbs(tp) {
					l.Add(p+".termination_message_path", "must be an absolute path")
				}
				l.maxLen(p+".termination_message_path", tp, MaxPathLen)
			}
			if _, ok := syncpodv1.TerminationMessagePolicy_name[int32(c.GetTerminationMessagePolicy())]; !ok {
				l.Add(p+".termination_message_policy", "unknown value %d", c.GetTerminationMessagePolicy())
			}
			if c.GetStdinOnce() && !c.GetStdin() {
				l.Add(p+".stdin_once", "only valid together with stdin")
			}
		}
	}
	each("init_containers", s.GetInitContainers())
	each("containers", s.GetContainers())
	each("ephemeral_containers", s.GetEphemeralContainers())
}

func (l *list) userID(p string, v *int64) {
	if v != nil && (*v < 0 || *v > maxUserID) {
		l.Add(p, "must be between 0 and %d", maxUserID)
	}
}

func (l *list) podSecurity(p string, sc *syncpodv1.PodSecurityContext, s *syncpodv1.PodSpec) {
	if sc == nil {
		return
	}
	l.userID(p+".run_as_user", sc.RunAsUser)
	l.userID(p+".run_as_group", sc.RunAsGroup)
	l.userID(p+".fs_group", sc.FsGroup)
	for i, g := range sc.GetSupplementalGroups() {
		l.userID(fmt.Sprintf("%s.supplemental_groups[%d]", p, i), &g)
	}
	l.seccomp(p+".seccomp_profile", sc.GetSeccompProfile())
	l.appArmor(p+".app_armor_profile", sc.GetAppArmorProfile())
	l.seLinux(p+".se_linux_options", sc.GetSeLinuxOptions())
	sysctls := sc.GetSysctls()
	if len(sysctls) > MaxSysctls {
		l.Add(p+".sysctls", "%d entries exceed the limit of %d", len(sysctls), MaxSysctls)
		sysctls = nil
	}
	seen := map[string]int{}
	for i, x := range sysctls {
		sp := fmt.Sprintf("%s.sysctls[%d].name", p, i)
		n := x.GetName()
		switch {
		case n == "":
			l.Add(sp, "required")
			continue
		case len(n) > 253 || !sysctlName().MatchString(n):
			l.Add(sp, "must be a sysctl name such as \"kernel.shm_rmid_forced\"")
			continue
		}
		if j, dup := seen[n]; dup {
			l.Add(sp, "duplicate sysctl (also %s.sysctls[%d])", p, j)
		}
		seen[n] = i
		dotted := strings.ReplaceAll(n, "/", ".")
		switch {
		case s.GetHostNetwork() && strings.HasPrefix(dotted, "net."):
			l.Add(sp, "may not be set with host_network: it would change the node's network namespace")
		case s.GetHostIpc() && (strings.HasPrefix(dotted, "kernel.shm") || strings.HasPrefix(dotted, "kernel.msg") ||
			dotted == "kernel.sem" || strings.HasPrefix(dotted, "fs.mqueue.")):
			l.Add(sp, "may not be set with host_ipc: it would change the node's IPC namespace")
		}
	}
}

func (l *list) containerSecurity(p string, sc *syncpodv1.SecurityContext) {
	if sc == nil {
		return
	}
	l.userID(p+".run_as_user", sc.RunAsUser)
	l.userID(p+".run_as_group", sc.RunAsGroup)
	l.seccomp(p+".seccomp_profile", sc.GetSeccompProfile())
	l.appArmor(p+".app_armor_profile", sc.GetAppArmorProfile())
	l.seLinux(p+".se_linux_options", sc.GetSeLinuxOptions())
	caps := sc.GetCapabilities()
	for field, list := range map[string][]string{"add": caps.GetAdd(), "drop": caps.GetDrop()} {
		if len(list) > MaxCapabilities {
			l.Add(p+".capabilities."+field, "%d entries exceed the limit of %d", len(list), MaxCapabilities)
			continue
		}
		for i, c := range list {
			if !capName().MatchString(c) {
				l.Add(fmt.Sprintf("%s.capabilities.%s[%d]", p, field, i), "must be a capability name such as \"NET_ADMIN\"")
			}
		}
	}
	if sc.AllowPrivilegeEscalation != nil && !sc.GetAllowPrivilegeEscalation() {
		if sc.GetPrivileged() {
			l.Add(p+".allow_privilege_escalation", "cannot be false when privileged is true")
		}
		for _, c := range caps.GetAdd() {
			if c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN" {
				l.Add(p+".allow_privilege_escalation", "cannot be false when SYS_ADMIN is added")
			}
		}
	}
}

func (l *list) seccomp(p string, sp *syncpodv1.SeccompProfile) {
	if sp == nil {
		return
	}
	switch sp.GetType() {
	case syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_LOCALHOST:
		lp := sp.GetLocalhostProfile()
		switch {
		case lp == "":
			l.Add(p+".localhost_profile", "required with type LOCALHOST")
		case path.IsAbs(lp) || strings.HasPrefix(path.Clean(lp), ".."):
			l.Add(p+".localhost_profile", "must be a relative path inside the seccomp directory")
		}
		l.maxLen(p+".localhost_profile", lp, MaxPathLen)
	case syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_RUNTIME_DEFAULT, syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_UNCONFINED:
		if sp.GetLocalhostProfile() != "" {
			l.Add(p+".localhost_profile", "only allowed with type LOCALHOST")
		}
	case syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_UNSPECIFIED:
		l.Add(p+".type", "required")
	default:
		l.Add(p+".type", "unknown value %d", sp.GetType())
	}
}

// appArmor checks a profile as the API server does: a type, and a
// localhost profile name with LOCALHOST only.
func (l *list) appArmor(p string, ap *syncpodv1.AppArmorProfile) {
	if ap == nil {
		return
	}
	lp := ap.GetLocalhostProfile()
	switch ap.GetType() {
	case syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_LOCALHOST:
		switch {
		case strings.TrimSpace(lp) == "":
			l.Add(p+".localhost_profile", "required with type LOCALHOST")
		case strings.ContainsAny(lp, "\x00\n"):
			l.Add(p+".localhost_profile", "must be a profile name")
		}
		l.maxLen(p+".localhost_profile", lp, MaxPathLen)
	case syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_RUNTIME_DEFAULT, syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED:
		if lp != "" {
			l.Add(p+".localhost_profile", "only allowed with type LOCALHOST")
		}
	case syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNSPECIFIED:
		l.Add(p+".type", "required")
	default:
		l.Add(p+".type", "unknown value %d", ap.GetType())
	}
}

// seLinux bounds the parts of an SELinux label; their syntax is the
// policy's business.
func (l *list) seLinux(p string, o *syncpodv1.SELinuxOptions) {
	for _, f := range [...]struct{ name, v string }{{"user", o.GetUser()}, {"role", o.GetRole()}, {"type", o.GetType()}, {"level", o.GetLevel()}} {
		l.maxLen(p+"."+f.name, f.v, MaxNameLen)
		if strings.ContainsAny(f.v, "\x00\n") {
			l.Add(p+"."+f.name, "must not contain NUL or newline")
		}
	}
}

func (l *list) dnsConfig(s *syncpodv1.PodSpec) {
	dc := s.GetDnsConfig()
	if s.GetDnsPolicy() == syncpodv1.DNSPolicy_DNS_POLICY_NONE {
		if len(dc.GetNameservers()) == 0 {
			l.Add("spec.dns_config.nameservers", "at least one is required with dns_policy NONE")
		}
	}
	if dc == nil {
		return
	}
	if n := len(dc.GetNameservers()); n > MaxDNSNameservers {
		l.Add("spec.dns_config.nameservers", "%d entries exceed the limit of %d", n, MaxDNSNameservers)
	}
	for i, ns := range dc.GetNameservers() {
		if len(ns) > MaxIPLen || net.ParseIP(ns) == nil {
			l.Add(fmt.Sprintf("spec.dns_config.nameservers[%d]", i), "must be an IP address")
		}
	}
	if n := len(dc.GetSearches()); n > MaxDNSSearches {
		l.Add("spec.dns_config.searches", "%d entries exceed the limit of %d", n, MaxDNSSearches)
	} else {
		for i, d := range dc.GetSearches() {
			if !isDNS1123Subdomain(strings.TrimSuffix(d, ".")) {
				l.Add(fmt.Sprintf("spec.dns_config.searches[%d]", i), "must be a DNS-1123 subdomain")
			}
		}
	}
	if n := len(dc.GetOptions()); n > MaxDNSOptions {
		l.Add("spec.dns_config.options", "%d entries exceed the limit of %d", n, MaxDNSOptions)
	} else {
		for i, o := range dc.GetOptions() {
			if o.GetName() == "" {
				l.Add(fmt.Sprintf("spec.dns_config.options[%d].name", i), "required")
			}
			l.maxLen(fmt.Sprintf("spec.dns_config.options[%d].name", i), o.GetName(), MaxEnvNameLen)
		}
	}
}

func (l *list) lifecycle(p string, lc *syncpodv1.Lifecycle, os *syncpodv1.PodOS) {
	if lc == nil {
		return
	}
	l.hook(p+".post_start", lc.GetPostStart())
	l.hook(p+".pre_stop", lc.GetPreStop())
	l.stopSignal(p+".stop_signal", lc.GetStopSignal(), os)
}

// stopSignal checks a container's stop signal as the API server does
// only in a pod that names its OS, and then one of that OS's
// signals.
func (l *list) stopSignal(p, sig string, os *syncpodv1.PodOS) {
	if sig == "" {
		return
	}
	switch os.GetName() {
	case "":
		l.Add(p, "may not be set when spec.os.name is empty: set spec.os.name to %s", fielderr.Quote(NodeOS))
	case "windows":
		if sig != "SIGKILL" && sig != "SIGTERM" {
			l.Add(p, "unsupported value %s on windows: SIGKILL or SIGTERM", fielderr.Quote(sig))
		}
	case "linux":
		if !slices.Contains(linuxStopSignals, sig) {
			l.Add(p, "unsupported value %s: one of %s", fielderr.Quote(sig), strings.Join(linuxStopSignals, ", "))
		}
	}
}

// LinuxStopSignalNames are the stop signals a Linux container may set,
// sorted (a copy of the list validation checks against).
func LinuxStopSignalNames() []string { return slices.Clone(linuxStopSignals) }

// linuxStopSignals are the stop signals a Linux container may set, as
// Kubernetes spells them (the API server's list; each has a value in the
// CRI's Signal enum), sorted.
var linuxStopSignals = []string{
	"SIGABRT", "SIGALRM", "SIGBUS", "SIGCHLD", "SIGCLD", "SIGCONT", "SIGFPE", "SIGHUP",
	"SIGILL", "SIGINT", "SIGIO", "SIGIOT", "SIGKILL", "SIGPIPE", "SIGPOLL", "SIGPROF",
	"SIGPWR", "SIGQUIT", "SIGRTMAX", "SIGRTMAX-1", "SIGRTMAX-10", "SIGRTMAX-11", "SIGRTMAX-12",
	"SIGRTMAX-13", "SIGRTMAX-14", "SIGRTMAX-2", "SIGRTMAX-3", "SIGRTMAX-4", "SIGRTMAX-5",
	"SIGRTMAX-6", "SIGRTMAX-7", "SIGRTMAX-8", "SIGRTMAX-9", "SIGRTMIN", "SIGRTMIN+1",
	"SIGRTMIN+10", "SIGRTMIN+11", "SIGRTMIN+12", "SIGRTMIN+13", "SIGRTMIN+14", "SIGRTMIN+15",
	"SIGRTMIN+2", "SIGRTMIN+3", "SIGRTMIN+4", "SIGRTMIN+5", "SIGRTMIN+6", "SIGRTMIN+7",
	"SIGRTMIN+8", "SIGRTMIN+9", "SIGSEGV", "SIGSTKFLT", "SIGSTOP", "SIGSYS", "SIGTERM",
	"SIGTRAP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGUSR1", "SIGUSR2", "SIGVTALRM",
	"SIGWINCH", "SIGXCPU", "SIGXFSZ",
}

func (l *list) hook(p string, h *syncpodv1.LifecycleHandler) {
	if h == nil {
		return
	}
	switch a := h.GetAction().(type) {
	case nil:
		l.Add(p, "exactly one action (exec, http_get, tcp_socket or sleep) is required")
	case *syncpodv1.LifecycleHandler_Exec:
		if len(a.Exec.GetCommand()) == 0 {
			l.Add(p+".exec.command", "required")
		} else {
			l.argv(p+".exec", argvPart{"command", a.Exec.GetCommand()})
		}
	case *syncpodv1.LifecycleHandler_HttpGet:
		if port := a.HttpGet.GetPort(); port < 1 || port > 65535 {
			l.Add(p+".http_get.port", "must be between 1 and 65535")
		}
		if s := a.HttpGet.GetScheme(); s != "" && s != "HTTP" && s != "HTTPS" {
			l.Add(p+".http_get.scheme", "must be HTTP or HTTPS")
		}
		for i, hd := range a.HttpGet.GetHttpHeaders() {
			if hd.GetName() == "" {
				l.Add(fmt.Sprintf("%s.http_get.http_headers[%d].name", p, i), "required")
			}
		}
	case *syncpodv1.LifecycleHandler_TcpSocket:
		if port := a.TcpSocket.GetPort(); port < 1 || port > 65535 {
			l.Add(p+".tcp_socket.port", "must be between 1 and 65535")
		}
	case *syncpodv1.LifecycleHandler_Sleep:
		if a.Sleep.GetSeconds() < 0 {
			l.Add(p+".sleep.seconds", "must be >= 0")
		}
	}
}
