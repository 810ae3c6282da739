package runner

import (
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/proto/podresources"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func i64p(v int64) *int64 { return &v }
func boolp(v bool) *bool  { return &v }

func res(reqCPU, reqMem, limCPU, limMem string) *syncpodv1.ResourceRequirements {
	return &syncpodv1.ResourceRequirements{
		Requests: &syncpodv1.ResourceList{Cpu: reqCPU, Memory: reqMem},
		Limits:   &syncpodv1.ResourceList{Cpu: limCPU, Memory: limMem},
	}
}

func TestPodQOSAndOOMScoreAdj(t *testing.T) {
	const gi = int64(1 << 30)
	for _, tc := range []struct {
		name   string
		ctrs   []*syncpodv1.ResourceRequirements
		qos    podresources.QOSClass
		oomAdj int64 // of the first container, on a 4 GiB node
	}{
		{"nothing asked: BestEffort", []*syncpodv1.ResourceRequirements{nil}, podresources.BestEffort, 1000},
		{"limits only (requests default to them): Guaranteed", []*syncpodv1.ResourceRequirements{res("", "", "1", "1Gi")}, podresources.Guaranteed, -997},
		{"equal requests and limits, written differently: Guaranteed", []*syncpodv1.ResourceRequirements{res("1000m", "1024Mi", "1", "1Gi")}, podresources.Guaranteed, -997},
		{"memory request of a quarter: Burstable 750", []*syncpodv1.ResourceRequirements{res("", "1Gi", "", "")}, podresources.Burstable, 750},
		{"tiny request: Burstable 999, never BestEffort's 1000", []*syncpodv1.ResourceRequirements{res("100m", "", "", "")}, podresources.Burstable, 999},
		{"request of all memory: Burstable floor 3", []*syncpodv1.ResourceRequirements{res("", "4Gi", "", "")}, podresources.Burstable, 3},
		{"one guaranteed, one empty: Burstable", []*syncpodv1.ResourceRequirements{res("", "", "1", "1Gi"), nil}, podresources.Burstable, 750},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{}}
			for i, r := range tc.ctrs {
				pod.Spec.Containers = append(pod.Spec.Containers, &syncpodv1.Container{Name: string(rune('a' + i)), Resources: r})
			}
			if got := podresources.QOS(pod); got != tc.qos {
				t.Errorf("QOS = %s, want %s", got, tc.qos)
			}
			if got := OOMScoreAdj(pod, pod.Spec.Containers[0], false, 4*gi); got != tc.oomAdj {
				t.Errorf("OOMScoreAdj = %d, want %d", got, tc.oomAdj)
			}
		})
	}
	// A sidecar never scores above the smallest regular container.
	side := &syncpodv1.Container{Name: "side", RestartPolicy: syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS,
		Resources: res("", "", "", "")}
	pod := &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{InitContainers: []*syncpodv1.Container{side},
		Containers: []*syncpodv1.Container{{Name: "app", Resources: res("", "2Gi", "", "")}}}}
	if got := OOMScoreAdj(pod, side, true, 4*gi); got != 500 {
		t.Errorf("sidecar OOMScoreAdj = %d, want 500 (the app's)", got)
	}
}

func TestVerifyRunAsNonRootMessages(t *testing.T) {
	pod := &syncpodv1.Pod{Uid: "u1", Name: "web", Namespace: "apps", Spec: &syncpodv1.PodSpec{
		SecurityContext: &syncpodv1.PodSecurityContext{RunAsNonRoot: boolp(true)}}}
	c := &syncpodv1.Container{Name: "app"}
	root := ImageUser{UID: i64p(0)}
	for _, tc := range []struct {
		name string
		c    *syncpodv1.Container
		u    ImageUser
		want string
	}{
		{"image runs as root", c, root, `container has runAsNonRoot and image will run as root (pod: "web_apps(u1)", container: app)`},
		{"image without user is root", c, imageUser(nil), `container has runAsNonRoot and image will run as root (pod: "web_apps(u1)", container: app)`},
		{"non-numeric image user", c, ImageUser{Username: "nginx"}, `container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root (pod: "web_apps(u1)", container: app)`},
		{"numeric image user", c, ImageUser{UID: i64p(101)}, ""},
		{"runAsUser 0", &syncpodv1.Container{Name: "app", SecurityContext: &syncpodv1.SecurityContext{RunAsUser: i64p(0)}}, root,
			`container's runAsUser breaks non-root policy (pod: "web_apps(u1)", container: app)`},
		{"runAsUser 1000 wins over the image", &syncpodv1.Container{Name: "app", SecurityContext: &syncpodv1.SecurityContext{RunAsUser: i64p(1000)}}, root, ""},
		{"container allows root", &syncpodv1.Container{Name: "app", SecurityContext: &syncpodv1.SecurityContext{RunAsNonRoot: boolp(false)}}, root, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyRunAsNonRoot(pod, tc.c, tc.u)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	if err := VerifyRunAsNonRoot(&syncpodv1.Pod{Spec: &syncpodv1.PodSpec{}}, c, root); err != nil {
		t.Errorf("no runAsNonRoot: %v", err)
	}
}

// TestConfigsAsTheKubeletFillsThem pins the CRI fields of a pod with a
// pod and a container security context.
func TestConfigsAsTheKubeletFillsThem(t *testing.T) {
	pod := &syncpodv1.Pod{Uid: "u1", Name: "web", Spec: &syncpodv1.PodSpec{
		HostPid: false, HostIpc: true, ShareProcessNamespace: boolp(true),
		SecurityContext: &syncpodv1.PodSecurityContext{
			RunAsUser: i64p(1000), RunAsGroup: i64p(3000), FsGroup: i64p(2000), SupplementalGroups: []int64{4000, 5000},
			SeccompProfile: &syncpodv1.SeccompProfile{Type: syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_LOCALHOST, LocalhostProfile: "p.json"},
			Sysctls:        []*syncpodv1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}},
		},
		Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox", Stdin: true, Tty: true,
			SecurityContext: &syncpodv1.SecurityContext{
				RunAsUser: i64p(7), Privileged: boolp(true), ReadOnlyRootFilesystem: boolp(true), AllowPrivilegeEscalation: boolp(true),
				Capabilities: &syncpodv1.Capabilities{Add: []string{"NET_ADMIN"}, Drop: []string{"ALL"}},
			}}},
	}}
	sb := SandboxConfig(pod, 0, "/logs")
	wantSB := &runtimeapi.LinuxPodSandboxConfig{
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_NODE},
			Privileged:         true,
			Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
			RunAsGroup:         &runtimeapi.Int64Value{Value: 3000},
			SupplementalGroups: []int64{2000, 4000, 5000},
		},
		Sysctls: map[string]string{"kernel.shm_rmid_forced": "1"},
		// a pod with no requests: minimum shares, no quota.
		Resources: &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuShares: 2},
		Overhead:  &runtimeapi.LinuxContainerResources{},
	}
	if !proto.Equal(sb.GetLinux(), wantSB) {
		t.Errorf("sandbox linux =\n%v\nwant\n%v", sb.GetLinux(), wantSB)
	}
	cfg, err := ContainerConfig(pod, pod.Spec.Containers[0], false, "h", 0, ContainerOptions{
		Image: ImageUser{Username: "ignored-when-run-as-user-set"}, Security: SecurityOptions{SeccompRoot: "/seccomp"}, MemoryCapacity: 1 << 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.GetLinux().GetSecurityContext()
	wantSC := &runtimeapi.LinuxContainerSecurityContext{
		Capabilities:       &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}},
		Privileged:         true,
		NamespaceOptions:   wantSB.SecurityContext.NamespaceOptions,
		RunAsUser:          &runtimeapi.Int64Value{Value: 7},
		RunAsGroup:         &runtimeapi.Int64Value{Value: 3000},
		ReadonlyRootfs:     true,
		SupplementalGroups: []int64{2000, 4000, 5000},
		NoNewPrivs:         false,
		Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/seccomp/p.json"},
		MaskedPaths:        DefaultMaskedPaths(),
		ReadonlyPaths:      DefaultReadonlyPaths(),
	}
	if !proto.Equal(sc, wantSC) {
		t.Errorf("container security =\n%v\nwant\n%v", sc, wantSC)
	}
	if !cfg.GetStdin() || !cfg.GetTty() || cfg.GetStdinOnce() {
		t.Errorf("stdin/tty: %v %v %v", cfg.GetStdin(), cfg.GetTty(), cfg.GetStdinOnce())
	}
	if got := cfg.GetLinux().GetResources().GetOomScoreAdj(); got != 1000 {
		t.Errorf("oom_score_adj %d, want BestEffort 1000", got)
	}
	if a := cfg.GetAnnotations(); a["io.kubernetes.container.terminationMessagePath"] != "/dev/termination-log" ||
		a["io.kubernetes.container.terminationMessagePolicy"] != "File" {
		t.Errorf("annotations %v", a)
	}

	// A container with nothing set: Unconfined (RuntimeDefault with
	// seccompDefault), the image's user, no_new_privs only on an explicit
	// allowPrivilegeEscalation=false, per-container PID namespace.
	bare := &syncpodv1.Pod{Uid: "u2", Name: "bare", Spec: &syncpodv1.PodSpec{HostNetwork: true,
		Containers: []*syncpodv1.Container{{Name: "c", Image: "i"}}}}
	for _, def := range []bool{false, true} {
		cfg, _ := ContainerConfig(bare, bare.Spec.Containers[0], false, "h", 0, ContainerOptions{Image: ImageUser{UID: i64p(101)}, Security: SecurityOptions{SeccompDefault: def}})
		sc := cfg.GetLinux().GetSecurityContext()
		want := runtimeapi.SecurityProfile_Unconfined
		if def {
			want = runtimeapi.SecurityProfile_RuntimeDefault
		}
		if sc.GetSeccomp().GetProfileType() != want || sc.GetRunAsUser().GetValue() != 101 || sc.GetNoNewPrivs() || sc.GetPrivileged() ||
			sc.GetNamespaceOptions().GetPid() != runtimeapi.NamespaceMode_CONTAINER || sc.GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
			t.Errorf("seccompDefault=%v: %v", def, sc)
		}
	}
	noEsc := &syncpodv1.Container{Name: "c", SecurityContext: &syncpodv1.SecurityContext{AllowPrivilegeEscalation: boolp(false)}}
	if !containerSecurity(bare, noEsc, ImageUser{}, SecurityOptions{}).GetNoNewPrivs() {
		t.Error("allowPrivilegeEscalation=false does not set no_new_privs")
	}
}

func TestHostsFileAndDNS(t *testing.T) {
	pod := &syncpodv1.Pod{Name: "web", Spec: &syncpodv1.PodSpec{Hostname: "h1",
		HostAliases: []*syncpodv1.HostAlias{{Ip: "10.0.0.9", Hostnames: []string{"a", "b"}}}}}
	got := string(HostsFile(pod, []string{"10.88.0.5"}, nil))
	want := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		"10.88.0.5\th1\n\n# Entries added by HostAliases.\n10.0.0.9\ta\tb\n"
	if got != want {
		t.Errorf("hosts file:\n%s\nwant:\n%s", got, want)
	}
	pod.Spec.HostNetwork = true
	pod.Spec.HostAliases = nil
	if got := string(HostsFile(pod, nil, []byte("127.0.0.1 node"))); got != "# Kubernetes-managed hosts file (host network).\n127.0.0.1 node\n" {
		t.Errorf("host-network hosts file %q", got)
	}

	resolv := []byte("# comment\nnameserver 192.0.2.53\nsearch a.example b.example\nsearch c.example\noptions ndots:1 rotate\n")
	dc := DNSConfig(&syncpodv1.Pod{Spec: &syncpodv1.PodSpec{DnsConfig: &syncpodv1.PodDNSConfig{
		Nameservers: []string{"192.0.2.53", "192.0.2.54"}, Searches: []string{"d.example"},
		Options: []*syncpodv1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("5")}, {Name: "edns0"}}}}}, resolv)
	if strings.Join(dc.GetServers(), ",") != "192.0.2.53,192.0.2.54" || strings.Join(dc.GetSearches(), ",") != "c.example,d.example" ||
		!slices.Equal(dc.GetOptions(), []string{"ndots:5", "rotate", "edns0"}) {
		t.Errorf("ClusterFirst merge: %v", dc)
	}
	none := DNSConfig(&syncpodv1.Pod{Spec: &syncpodv1.PodSpec{DnsPolicy: syncpodv1.DNSPolicy_DNS_POLICY_NONE,
		DnsConfig: &syncpodv1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}}}}, resolv)
	if strings.Join(none.GetServers(), ",") != "1.1.1.1" || len(none.GetSearches())+len(none.GetOptions()) != 0 {
		t.Errorf("None: %v", none)
	}
	if DNSConfig(&syncpodv1.Pod{Spec: &syncpodv1.PodSpec{}}, nil) != nil {
		t.Error("nothing to say must be nil (the runtime's default)")
	}
}

// TestAppArmorAndSELinuxAsTheKubeletPassesThem: the container's profile
// (else the pod's) goes to CRI in the current field and the deprecated
// string; no profile means the runtime's default only on a host with
// AppArmor; a profile the host cannot enforce is refused with the
// kubelet's message, Unconfined never is. SELinux options go to the
// container (its own, else the pod's, as a whole) and the pod's to the
// sandbox.
func TestAppArmorAndSELinuxAsTheKubeletPassesThem(t *testing.T) {
	local := &syncpodv1.AppArmorProfile{Type: syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_LOCALHOST, LocalhostProfile: "k8s-nginx"}
	unconfined := &syncpodv1.AppArmorProfile{Type: syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED}
	podSE := &syncpodv1.SELinuxOptions{Type: "spc_t", Level: "s0:c1,c2"}
	ownSE := &syncpodv1.SELinuxOptions{Level: "s0:c9"}
	pod := &syncpodv1.Pod{Uid: "u1", Name: "web", Spec: &syncpodv1.PodSpec{
		SecurityContext: &syncpodv1.PodSecurityContext{AppArmorProfile: local, SeLinuxOptions: podSE},
		Containers: []*syncpodv1.Container{
			{Name: "inherits", Image: "busybox"},
			{Name: "own", Image: "busybox", SecurityContext: &syncpodv1.SecurityContext{AppArmorProfile: unconfined, SeLinuxOptions: ownSE}},
		},
	}}
	bare := &syncpodv1.Pod{Uid: "u2", Name: "bare", Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "c", Image: "busybox"}}}}
	for _, tc := range []struct {
		name       string
		pod        *syncpodv1.Pod
		c          int
		enabled    bool
		wantAA     *runtimeapi.SecurityProfile
		wantAAStr  string
		wantSE     *runtimeapi.SELinuxOption
		wantRefuse bool
	}{
		{"pod's Localhost profile", pod, 0, true, &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-nginx"},
			"localhost/k8s-nginx", &runtimeapi.SELinuxOption{Type: "spc_t", Level: "s0:c1,c2"}, false},
		{"pod's Localhost profile on a host without AppArmor: refused", pod, 0, false, nil, "", nil, true},
		{"container's Unconfined overrides, allowed anywhere", pod, 1, false, &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			"unconfined", &runtimeapi.SELinuxOption{Level: "s0:c9"}, false},
		{"nothing set, host with AppArmor: runtime default", bare, 0, true, &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			"runtime/default", nil, false},
		{"nothing set, host without AppArmor: nothing", bare, 0, false, nil, "", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.pod.Spec.Containers[tc.c]
			err := VerifyAppArmor(tc.pod, c, tc.enabled)
			if tc.wantRefuse {
				if err == nil || err.Error() != "Cannot enforce AppArmor: AppArmor is not enabled on the host" {
					t.Errorf("VerifyAppArmor = %v, want the kubelet's refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("VerifyAppArmor = %v", err)
			}
			cfg, err := ContainerConfig(tc.pod, c, false, "h", 0, ContainerOptions{Security: SecurityOptions{AppArmorEnabled: tc.enabled}})
			if err != nil {
				t.Fatal(err)
			}
			sc := cfg.GetLinux().GetSecurityContext()
			if !proto.Equal(sc.GetApparmor(), tc.wantAA) || sc.GetApparmorProfile() != tc.wantAAStr {
				t.Errorf("apparmor %v %q, want %v %q", sc.GetApparmor(), sc.GetApparmorProfile(), tc.wantAA, tc.wantAAStr)
			}
			if !proto.Equal(sc.GetSelinuxOptions(), tc.wantSE) {
				t.Errorf("selinux %v, want %v", sc.GetSelinuxOptions(), tc.wantSE)
			}
		})
	}
	sb := SandboxConfig(pod, 0, "/logs")
	if got := sb.GetLinux().GetSecurityContext().GetSelinuxOptions(); !proto.Equal(got, &runtimeapi.SELinuxOption{Type: "spc_t", Level: "s0:c1,c2"}) {
		t.Errorf("sandbox selinux %v", got)
	}
}

// TestParseCPUList: the kernel's possible-CPU list, as the kubelet reads
// it for the thermal_throttle masked paths; anything else is refused
// (DefaultMaskedPaths then falls back to 0..NumCPU-1).
func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"0-1\n", []int{0, 1}, true},
		{"0", []int{0}, true},
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, true},
		{"", nil, false},
		{"3-1", nil, false},
		{"0-", nil, false},
		{"a", nil, false},
		{"-1", nil, false},
	} {
		got, ok := parseCPUList(tc.in)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestDefaultMaskedPathsAddTheCPUsThermalThrottle: the fixed list first,
// then exactly the possible CPUs' thermal_throttle directories that exist
// on this machine, in CPU order.
func TestDefaultMaskedPathsAddTheCPUsThermalThrottle(t *testing.T) {
	got := DefaultMaskedPaths()
	if !slices.Equal(got[:len(baseMaskedPaths)], baseMaskedPaths) {
		t.Fatalf("masked paths %v do not begin with the fixed list %v", got, baseMaskedPaths)
	}
	// The oracle: every cpuN/thermal_throttle a glob finds, by N.
	found, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle")
	num := func(p string) int {
		n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "cpu"))
		return n
	}
	slices.SortFunc(found, func(a, b string) int { return num(a) - num(b) })
	want := found
	if extra := got[len(baseMaskedPaths):]; !slices.Equal(extra, want) {
		t.Fatalf("thermal_throttle paths %v, want %v", extra, want)
	}
	if len(possibleCPUs()) < runtime.NumCPU() {
		t.Fatalf("possible CPUs %v are fewer than the %d usable", possibleCPUs(), runtime.NumCPU())
	}
}
