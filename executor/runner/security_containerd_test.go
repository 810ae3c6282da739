package runner_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Tests of the kubelet's defaults and of the security context against a
// real containerd: each container prints what it sees of itself (its ids,
// /proc/self/status, its mounts) and the test reads its log. Where the
// container cannot see a setting, the runtime's own record of the OCI spec
// it built (ContainerStatus verbose info) is read instead.

// withPodDir rebuilds x's runner with a pod directory, as the executor
// binary always has.
func withPodDir(t *testing.T, x *real, hostsFile string) string {
	t.Helper()
	dir := t.TempDir()
	var err error
	x.r, err = runner.New(runner.Config{
		Runtime: runtimeclient.NewRuntime(x.cd.Runtime, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Images:  runtimeclient.NewImages(x.cd.Images, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Backoff: x.store, LogDir: x.logDir, PodDir: dir, HostsFile: hostsFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// containerLog returns the lines container id wrote (CRI log format
// prefixes stripped).
func containerLog(t *testing.T, x *real, id string) []string {
	t.Helper()
	st, err := x.cd.Runtime.ContainerStatus(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(st.GetStatus().GetLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) == 4 {
			out = append(out, parts[3])
		}
	}
	return out
}

// runToExit starts pod's containers in a new sandbox and waits until
// container name exited; it returns that container.
func runToExit(t *testing.T, x *real, pod *syncpodv1.Pod, name string) *syncpodv1.ObservedContainer {
	t.Helper()
	var names []string
	for _, c := range pod.GetSpec().GetContainers() {
		names = append(names, c.GetName())
	}
	mustSucceed(t, x.apply(t, pod, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: start(names...)}))
	o := x.waitFor(t, pod.GetUid(), name+" to exit", inState(name, syncpodv1.ContainerState_CONTAINER_STATE_EXITED))
	return newest(o, name)
}

// mounts are the container's mount points and their options, from the
// "mnt <point> <options>" lines of probeScript.
func mounts(lines []string) map[string]string {
	out := map[string]string{}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "mnt" {
			out[f[1]] = f[2]
		}
	}
	return out
}

// checkProcDefaults checks the kubelet's masked and read-only paths that
// exist on this node (a kernel may lack some, e.g. /proc/kcore) are
// mounted over in the container, or none when want is false.
func checkProcDefaults(t *testing.T, lines []string, want bool) {
	t.Helper()
	m := mounts(lines)
	n := 0
	for _, p := range append(runner.DefaultMaskedPaths(), runner.DefaultReadonlyPaths()...) {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		n++
		if _, ok := m[p]; ok != want {
			t.Errorf("%s mounted over in the container: %v, want %v", p, ok, want)
		}
	}
	if n == 0 {
		t.Fatal("none of the default masked or read-only paths exists on this node")
	}
	if opts := m["/proc/sys"]; want && !strings.HasPrefix(opts, "ro") {
		t.Errorf("/proc/sys mount options %q, want read-only", opts)
	}
}

func hasLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

func lineWithPrefix(lines []string, prefix string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimSpace(strings.TrimPrefix(l, prefix))
		}
	}
	return ""
}

// ociSpec is the part of containerd's verbose info the tests read.
type ociSpec struct {
	RuntimeSpec struct {
		Process struct {
			OOMScoreAdj *int `json:"oomScoreAdj"`
		} `json:"process"`
		Linux struct {
			MaskedPaths   []string          `json:"maskedPaths"`
			ReadonlyPaths []string          `json:"readonlyPaths"`
			Sysctl        map[string]string `json:"sysctl"`
			Seccomp       *struct {
				DefaultAction string `json:"defaultAction"`
			} `json:"seccomp"`
		} `json:"linux"`
	} `json:"runtimeSpec"`
}

func sandboxSpec(t *testing.T, x *real, id string) ociSpec {
	t.Helper()
	st, err := x.cd.Runtime.PodSandboxStatus(context.Background(), id, true)
	if err != nil {
		t.Fatal(err)
	}
	var s ociSpec
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &s); err != nil {
		t.Fatalf("sandbox info: %v", err)
	}
	return s
}

const probeScript = `id -u; id -g; echo "groups $(id -G)"; grep -E '^(CapEff|CapBnd|Seccomp|NoNewPrivs):' /proc/self/status;
echo "oom $(cat /proc/self/oom_score_adj)";
awk '{print "mnt", $5, $6}' /proc/self/mountinfo;
if touch /rootfs-probe 2>/dev/null; then echo rootfs-writable; else echo rootfs-readonly; fi;
head -n 1 /etc/hosts; grep -E '^10\.1\.2\.3' /etc/hosts;
echo "bye from $(id -u)" > /dev/termination-log`

// TestContainerdKubeletDefaults: a pod that asks for nothing gets what the
// kubelet gives it — the sandbox under RuntimeDefault seccomp, masked and
// read-only /proc paths, the BestEffort OOM score, the managed /etc/hosts
// (the node's, for a host-network pod, plus host aliases) and a writable
// termination log.
func TestContainerdKubeletDefaults(t *testing.T) {
	x := newReal(t, backoff.Config{})
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost node-hosts-marker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	podDir := withPodDir(t, x, hosts)
	pod := realPod(t, x, nil, sh("probe", x.cd.Busybox, probeScript))
	pod.Spec.HostAliases = []*syncpodv1.HostAlias{{Ip: "10.1.2.3", Hostnames: []string{"alias-a", "alias-b"}}}
	c := runToExit(t, x, pod, "probe")
	if c.GetExitCode() != 0 {
		t.Fatalf("probe exited %d: %v", c.GetExitCode(), containerLog(t, x, c.GetId()))
	}
	log := containerLog(t, x, c.GetId())
	checkProcDefaults(t, log, true)
	for _, want := range []string{"0", "oom 1000", "rootfs-writable",
		"# Kubernetes-managed hosts file (host network).", "10.1.2.3\talias-a\talias-b"} {
		if !hasLine(log, want) {
			t.Errorf("container output lacks %q:\n%s", want, strings.Join(log, "\n"))
		}
	}
	// The container runs Unconfined (the kubelet's seccompDefault=false)
	// with the runtime's default capabilities.
	if got := lineWithPrefix(log, "Seccomp:"); got != "0" {
		t.Errorf("container Seccomp = %q, want 0 (unconfined)", got)
	}
	if got := lineWithPrefix(log, "CapEff:"); got != "00000000a80425fb" {
		t.Errorf("container CapEff = %q, want the runtime default 00000000a80425fb", got)
	}
	// The sandbox runs under the runtime's default seccomp profile.
	if s := sandboxSpec(t, x, c.GetSandboxId()); s.RuntimeSpec.Linux.Seccomp == nil || s.RuntimeSpec.Linux.Seccomp.DefaultAction == "" {
		t.Errorf("sandbox has no seccomp profile: %+v", s.RuntimeSpec.Linux)
	}
	// The termination message landed in the pod directory.
	if msg := readTerminationLog(t, podDir, pod.GetUid(), "probe"); msg != "bye from 0\n" {
		t.Errorf("termination log = %q", msg)
	}
	// Removing the pod's last sandbox removes its directory.
	mustSucceed(t, x.apply(t, pod, &syncpodv1.PodActions{KillPod: true}))
	if _, err := x.r.RemoveResources(context.Background(), []string{c.GetId()}, []string{c.GetSandboxId()}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(podDir, pod.GetUid())); !os.IsNotExist(err) {
		t.Errorf("pod directory after removal: %v", err)
	}
}

// readTerminationLog reads the one termination-log file of container name.
func readTerminationLog(t *testing.T, podDir, uid, name string) string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(podDir, uid, name+".*.termination-log"))
	if len(logs) != 1 {
		t.Fatalf("termination logs of %s: %v", name, logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestContainerdSecurityContext: users, groups, capabilities,
// no_new_privs, seccomp and a read-only root reach the process.
func TestContainerdSecurityContext(t *testing.T) {
	x := newReal(t, backoff.Config{})
	withPodDir(t, x, "")
	u, g, fs := int64(1000), int64(3000), int64(2000)
	f := false
	tr := true
	c := sh("probe", x.cd.Busybox, probeScript)
	c.SecurityContext = &syncpodv1.SecurityContext{
		ReadOnlyRootFilesystem:   &tr,
		AllowPrivilegeEscalation: &f,
		Capabilities:             &syncpodv1.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}},
		SeccompProfile:           &syncpodv1.SeccompProfile{Type: syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_RUNTIME_DEFAULT},
	}
	c.Resources = &syncpodv1.ResourceRequirements{Requests: &syncpodv1.ResourceList{Memory: "64Mi"}}
	pod := realPod(t, x, nil, c)
	pod.Spec.SecurityContext = &syncpodv1.PodSecurityContext{
		RunAsUser: &u, RunAsGroup: &g, FsGroup: &fs, SupplementalGroups: []int64{4000}, RunAsNonRoot: &tr,
	}
	oc := runToExit(t, x, pod, "probe")
	log := containerLog(t, x, oc.GetId())
	checkProcDefaults(t, log, true)
	for _, want := range []string{"1000", "3000", "groups 3000 2000 4000", "rootfs-readonly"} {
		if !hasLine(log, want) {
			t.Errorf("container output lacks %q:\n%s", want, strings.Join(log, "\n"))
		}
	}
	for prefix, want := range map[string]string{
		"CapBnd:":     "0000000000000400", // NET_BIND_SERVICE only
		"CapEff:":     "0000000000000000", // a non-root user has none effective
		"NoNewPrivs:": "1",
		"Seccomp:":    "2",
	} {
		if got := lineWithPrefix(log, prefix); got != want {
			t.Errorf("%s %q, want %q", prefix, got, want)
		}
	}
	if want := runner.OOMScoreAdj(pod, c, false, runner.MachineMemory()); !hasLine(log, "oom "+itoa(want)) {
		t.Errorf("Burstable oom score: want %d:\n%s", want, strings.Join(log, "\n"))
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestContainerdRunAsNonRootRefused: an image that runs as root with
// runAsNonRoot is refused before anything is created, with the kubelet's
// message, and a run_as_user of 0 likewise.
func TestContainerdRunAsNonRootRefused(t *testing.T) {
	x := newReal(t, backoff.Config{})
	tr := true
	zero := int64(0)
	imageRoot := sh("img", x.cd.Busybox, "true")
	imageRoot.SecurityContext = &syncpodv1.SecurityContext{RunAsNonRoot: &tr}
	userZero := sh("zero", x.cd.Busybox, "true")
	userZero.SecurityContext = &syncpodv1.SecurityContext{RunAsNonRoot: &tr, RunAsUser: &zero}
	pod := realPod(t, x, nil, imageRoot, userZero)
	resp := x.apply(t, pod, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: start("img", "zero")})
	want := map[string]string{
		"img":  `container has runAsNonRoot and image will run as root (pod: "itest_syncpod-test(` + pod.GetUid() + `)", container: img)`,
		"zero": `container's runAsUser breaks non-root policy (pod: "itest_syncpod-test(` + pod.GetUid() + `)", container: zero)`,
	}
	for _, s := range resp.GetSteps() {
		if s.GetStep() != executorv1.Step_STEP_START_CONTAINER {
			continue
		}
		if s.GetOutcome() != executorv1.Outcome_OUTCOME_FAILED || s.GetReason() != "CreateContainerConfigError" || s.GetMessage() != want[s.GetTarget()] {
			t.Errorf("%s: %v %s %q", s.GetTarget(), s.GetOutcome(), s.GetReason(), s.GetMessage())
		}
		delete(want, s.GetTarget())
	}
	if len(want) != 0 {
		t.Errorf("no start step for %v", want)
	}
	if o := x.observe(t, pod.GetUid()); len(o.GetContainers()) != 0 {
		t.Errorf("containers were created: %v", o.GetContainers())
	}
}

// TestContainerdPrivilegedAndSysctls: a privileged container gets every
// capability and unmasked /proc; pod sysctls are set in the sandbox.
func TestContainerdPrivilegedAndSysctls(t *testing.T) {
	x := newReal(t, backoff.Config{})
	tr := true
	c := sh("probe", x.cd.Busybox, probeScript+`; echo "shm $(cat /proc/sys/kernel/shm_rmid_forced)"`)
	c.SecurityContext = &syncpodv1.SecurityContext{Privileged: &tr}
	pod := realPod(t, x, nil, c)
	pod.Spec.SecurityContext = &syncpodv1.PodSecurityContext{Sysctls: []*syncpodv1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}}
	oc := runToExit(t, x, pod, "probe")
	log := containerLog(t, x, oc.GetId())
	checkProcDefaults(t, log, false)
	for _, want := range []string{"shm 1"} {
		if !hasLine(log, want) {
			t.Errorf("container output lacks %q:\n%s", want, strings.Join(log, "\n"))
		}
	}
	if got := lineWithPrefix(log, "CapEff:"); got == "00000000a80425fb" || got == "" {
		t.Errorf("privileged CapEff = %q, want every capability", got)
	}
	if s := sandboxSpec(t, x, oc.GetSandboxId()); s.RuntimeSpec.Linux.Sysctl["kernel.shm_rmid_forced"] != "1" {
		t.Errorf("sandbox sysctls %v", s.RuntimeSpec.Linux.Sysctl)
	}
}

// TestContainerdCommonSpec: dnsPolicy None with dnsConfig becomes the
// container's resolv.conf, shareProcessNamespace puts the sandbox's PID 1
// in the container's view, tty gives a terminal, and runtimeClassName
// reaches RunPodSandbox as the handler (an unknown one is refused there).
func TestContainerdCommonSpec(t *testing.T) {
	x := newReal(t, backoff.Config{})
	c := sh("probe", x.cd.Busybox, `cat /etc/resolv.conf; echo "pid1 $(tr '\0' ' ' < /proc/1/cmdline)"; if [ -t 1 ]; then echo tty; else echo no-tty; fi`)
	c.Tty = true
	pod := realPod(t, x, nil, c)
	share := true
	pod.Spec.ShareProcessNamespace = &share
	pod.Spec.RuntimeClassName = "runc"
	pod.Spec.DnsPolicy = syncpodv1.DNSPolicy_DNS_POLICY_NONE
	pod.Spec.DnsConfig = &syncpodv1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"syncpod.example"},
		Options: []*syncpodv1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("2")}}}
	oc := runToExit(t, x, pod, "probe")
	log := containerLog(t, x, oc.GetId())
	text := strings.ReplaceAll(strings.Join(log, "\n"), "\r", "")
	for _, want := range []string{"nameserver 192.0.2.53", "search syncpod.example", "options ndots:2", "tty"} {
		if !strings.Contains(text, want) {
			t.Errorf("container output lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "pid1 /bin/sh -c trap 'exit 0' TERM INT") {
		t.Errorf("PID 1 is not the sandbox's with shareProcessNamespace:\n%s", text)
	}

	bad := realPod(t, x, nil, sh("c", x.cd.Busybox, "true"))
	bad.Spec.RuntimeClassName = "no-such-handler"
	resp := x.apply(t, bad, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: start("c")})
	var sbStep *executorv1.StepResult
	for _, s := range resp.GetSteps() {
		if s.GetStep() == executorv1.Step_STEP_CREATE_SANDBOX {
			sbStep = s
		}
	}
	if sbStep.GetOutcome() != executorv1.Outcome_OUTCOME_FAILED || !strings.Contains(sbStep.GetMessage(), "no-such-handler") {
		t.Errorf("sandbox with an unknown runtime handler: %v", sbStep)
	}
}

// TestContainerdLocalhostSeccompProfile: a Localhost profile is read by
// the runtime from the executor's seccomp directory and filters the
// container's system calls.
func TestContainerdLocalhostSeccompProfile(t *testing.T) {
	x := newReal(t, backoff.Config{})
	root := t.TempDir()
	profile := `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}`
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "profiles", "no-mkdir.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	x.r, err = runner.New(runner.Config{
		Runtime: runtimeclient.NewRuntime(x.cd.Runtime, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Images:  runtimeclient.NewImages(x.cd.Images, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Backoff: x.store, LogDir: x.logDir, Security: runner.SecurityOptions{SeccompRoot: root},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := sh("probe", x.cd.Busybox, `if mkdir /tmp/seccomp-probe 2>/dev/null; then echo mkdir-allowed; else echo mkdir-denied; fi; grep Seccomp: /proc/self/status`)
	c.SecurityContext = &syncpodv1.SecurityContext{SeccompProfile: &syncpodv1.SeccompProfile{
		Type: syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_LOCALHOST, LocalhostProfile: "profiles/no-mkdir.json"}}
	oc := runToExit(t, x, realPod(t, x, nil, c), "probe")
	log := containerLog(t, x, oc.GetId())
	if !hasLine(log, "mkdir-denied") || lineWithPrefix(log, "Seccomp:") != "2" {
		t.Errorf("container output under the Localhost profile:\n%s", strings.Join(log, "\n"))
	}
}

// TestContainerdAppArmorAndSELinux: on this host (no AppArmor, no SELinux)
// an Unconfined AppArmor profile and SELinux options reach containerd,
// which runs the container (the kubelet passes them the same way); a
// Localhost AppArmor profile is refused before CreateContainer with the
// kubelet's message.
func TestContainerdAppArmorAndSELinux(t *testing.T) {
	x := newReal(t, backoff.Config{})
	if runner.HostAppArmorEnabled() {
		t.Skip("the host enforces AppArmor: the refusal cannot be shown here")
	}
	ok := sh("ok", x.cd.Busybox, "echo ran")
	ok.SecurityContext = &syncpodv1.SecurityContext{
		AppArmorProfile: &syncpodv1.AppArmorProfile{Type: syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED},
		SeLinuxOptions:  &syncpodv1.SELinuxOptions{Type: "spc_t", Level: "s0:c1,c2"},
	}
	refused := sh("refused", x.cd.Busybox, "true")
	refused.SecurityContext = &syncpodv1.SecurityContext{
		AppArmorProfile: &syncpodv1.AppArmorProfile{Type: syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_LOCALHOST, LocalhostProfile: "k8s-nginx"}}
	pod := realPod(t, x, nil, ok, refused)
	resp := x.apply(t, pod, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: start("ok", "refused")})
	for _, s := range resp.GetSteps() {
		if s.GetStep() != executorv1.Step_STEP_START_CONTAINER {
			continue
		}
		switch s.GetTarget() {
		case "ok":
			if s.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
				t.Errorf("ok: %v %s %s", s.GetOutcome(), s.GetReason(), s.GetMessage())
			}
		case "refused":
			if s.GetReason() != "CreateContainerConfigError" || s.GetMessage() != "Cannot enforce AppArmor: AppArmor is not enabled on the host" {
				t.Errorf("refused: %v %s %q", s.GetOutcome(), s.GetReason(), s.GetMessage())
			}
		}
	}
	o := x.waitFor(t, pod.GetUid(), "ok to exit", inState("ok", syncpodv1.ContainerState_CONTAINER_STATE_EXITED))
	if log := containerLog(t, x, newest(o, "ok").GetId()); !hasLine(log, "ran") {
		t.Errorf("ok's output %v", log)
	}
}
