package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func rl(cpu, mem string) *syncpodv1.ResourceList {
	return &syncpodv1.ResourceList{Cpu: cpu, Memory: mem}
}

func ctr(req, lim *syncpodv1.ResourceList) *syncpodv1.Container {
	return &syncpodv1.Container{Name: "c", Resources: &syncpodv1.ResourceRequirements{Requests: req, Limits: lim}}
}

func testPod(uid string, cs ...*syncpodv1.Container) *syncpodv1.Pod {
	return &syncpodv1.Pod{Uid: uid, Spec: &syncpodv1.PodSpec{Containers: cs}}
}

const (
	mi        = 1 << 20
	uidG      = "0f1e2d3c-aaaa-4bbb-8ccc-000000000001"
	uidB      = "0f1e2d3c-aaaa-4bbb-8ccc-000000000002"
	uidBE     = "0f1e2d3c-aaaa-4bbb-8ccc-000000000003"
	uidPL     = "0f1e2d3c-aaaa-4bbb-8ccc-000000000004"
	uidEscape = "a-b"
)

// The four pods of the tests with the values the kubelet's formulas give
// them, worked out by hand: shares = milliCPU*1024/1000 (at least 2),
// quota = milliCPU*100 µs, weight = 1 + (shares-2)*9999/262142.
var (
	guaranteed = testPod(uidG, ctr(nil, rl("500m", "128Mi")), ctr(rl("250m", "64Mi"), rl("250m", "64Mi")))
	burstable  = testPod(uidB, ctr(rl("100m", "32Mi"), rl("1", "")), ctr(rl("200m", ""), rl("", "")))
	bestEffort = testPod(uidBE, ctr(nil, nil))
	podLevel   = func() *syncpodv1.Pod {
		p := testPod(uidPL, ctr(rl("100m", "16Mi"), nil), ctr(nil, nil))
		p.Spec.Resources = &syncpodv1.ResourceRequirements{Requests: rl("300m", "64Mi"), Limits: rl("1500m", "256Mi")}
		p.Spec.Overhead = rl("50m", "8Mi")
		return p
	}()
)

// Pinned by.
func TestPaths(t *testing.T) {
	tests := []struct {
		name, root string
		pod        *syncpodv1.Pod
		cgroupfs   string
		systemd    string
	}{
		{"guaranteed under the node cgroup", "/", guaranteed, "/kubepods/pod" + uidG,
			"/kubepods.slice/kubepods-pod0f1e2d3c_aaaa_4bbb_8ccc_000000000001.slice"},
		{"burstable", "", burstable, "/kubepods/burstable/pod" + uidB,
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_aaaa_4bbb_8ccc_000000000002.slice"},
		{"besteffort", "/", bestEffort, "/kubepods/besteffort/pod" + uidBE,
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e2d3c_aaaa_4bbb_8ccc_000000000003.slice"},
		{"under a cgroup root", "/syncpod-test/x", testPod(uidEscape), "/syncpod-test/x/kubepods/besteffort/poda-b",
			"/syncpod_test.slice/syncpod_test-x.slice/syncpod_test-x-kubepods.slice/syncpod_test-x-kubepods-besteffort.slice/syncpod_test-x-kubepods-besteffort-poda_b.slice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for d, want := range map[Driver]string{Cgroupfs: tt.cgroupfs, Systemd: tt.systemd} {
				m := &Manager{driver: d, node: NodeName(tt.root)}
				got := m.Parent(tt.pod)
				if got != want {
					t.Errorf("%s: Parent = %s, want %s", d, got, want)
				}
				if uid := podUIDOf(filepath.Base(got), d); uid != tt.pod.GetUid() {
					t.Errorf("%s: UID read back %q, want %q", d, uid, tt.pod.GetUid())
				}
			}
		})
	}
}

// Pinned by.
func TestPodFiles(t *testing.T) {
	tests := []struct {
		name   string
		pod    *syncpodv1.Pod
		v1, v2 map[string]string
	}{
		{
			// requests 750m, limits 750m and 192Mi: shares 768, quota 75000
			name: "guaranteed",
			pod:  guaranteed,
			v1: map[string]string{"cpu.shares": "768", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "75000",
				"memory.limit_in_bytes": "201326592"},
			v2: map[string]string{"cpu.weight": "30", "cpu.max": "75000 100000", "memory.max": "201326592"},
		},
		{
			// requests 300m (shares 307); the second container limits
			// nothing, so neither quota nor memory limit
			name: "burstable",
			pod:  burstable,
			v1:   map[string]string{"cpu.shares": "307"},
			v2:   map[string]string{"cpu.weight": "12"},
		},
		{
			name: "besteffort",
			pod:  bestEffort,
			v1:   map[string]string{"cpu.shares": "2"},
			v2:   map[string]string{"cpu.weight": "1"},
		},
		{
			// pod-level 300m/64Mi requests and 1500m/256Mi limits, plus
			// 50m/8Mi overhead: shares 350*1024/1000 = 358, quota 155000,
			// memory 264Mi; memory.high = 72Mi + 0.9*(264-72)Mi rounded
			// down to a page: 256691404.8 -> 256688128
			name: "pod-level resources",
			pod:  podLevel,
			v1:   map[string]string{"cpu.shares": "358", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "155000", "memory.limit_in_bytes": "276824064"},
			v2: map[string]string{"cpu.weight": "14", "cpu.max": "155000 100000", "memory.max": "276824064",
				"memory.high": "256688128"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v2 := range []bool{false, true} {
				want := tt.v1
				if v2 {
					want = tt.v2
				}
				got := map[string]string{}
				for _, f := range files(PodConfig(tt.pod, v2), v2) {
					got[f.name] = f.value
				}
				if !equal(got, want) {
					t.Errorf("v2=%v: files %v, want %v", v2, got, want)
				}
			}
		})
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// fakeV1 lays out a cgroup v1 root like this host's: one directory per
// hierarchy, each with cgroup.procs, cpuset with its CPUs and memory
// nodes, and a hybrid unified tree that must be left alone.
func fakeV1(t *testing.T) string {
	root := t.TempDir()
	for _, h := range []string{"cpu,cpuacct", "memory", "pids", "cpuset", "systemd", "unified"} {
		mustWrite(t, filepath.Join(root, h, "cgroup.procs"), "")
	}
	if err := os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, "unified", "cgroup.controllers"), "")
	mustWrite(t, filepath.Join(root, "cpuset", "cpuset.cpus"), "0-1\n")
	mustWrite(t, filepath.Join(root, "cpuset", "cpuset.mems"), "0\n")
	return root
}

func fakeV2(t *testing.T) string {
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n")
	return root
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

// Pinned by.
func TestManagerV1Cgroupfs(t *testing.T) {
	root := fakeV1(t)
	m, err := New(Options{FSRoot: root, CgroupRoot: "/t1", Driver: Cgroupfs, NodeMilliCPU: 2000, NodeMemory: 4 << 30, NodePIDs: 32768})
	if err != nil {
		t.Fatal(err)
	}
	if m.V2() {
		t.Fatal("a v1 tree read as v2")
	}
	if err := m.Init(func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*syncpodv1.Pod{guaranteed, burstable, bestEffort, podLevel} {
		parent, err := m.Ensure(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"cpu,cpuacct", "memory", "pids", "cpuset", "systemd"} {
			if fi, err := os.Stat(filepath.Join(root, h, parent)); err != nil || !fi.IsDir() {
				t.Errorf("%s: no cgroup %s", h, parent)
			}
		}
		if _, err := os.Stat(filepath.Join(root, "unified", parent)); err == nil {
			t.Errorf("the hybrid unified tree got %s", parent)
		}
	}
	cpu, mem := filepath.Join(root, "cpu,cpuacct", "t1", "kubepods"), filepath.Join(root, "memory", "t1", "kubepods")
	checks := map[string]string{
		filepath.Join(cpu, "cpu.shares"):                                            "2048",
		filepath.Join(mem, "memory.limit_in_bytes"):                                 "4294967296",
		filepath.Join(root, "pids", "t1", "kubepods", "pids.max"):                   "32768",
		filepath.Join(cpu, "besteffort", "cpu.shares"):                              "2",
		filepath.Join(cpu, "burstable", "cpu.shares"):                               "665", // (300m + 350m) * 1024 / 1000
		filepath.Join(cpu, "pod"+uidG, "cpu.cfs_quota_us"):                          "75000",
		filepath.Join(mem, "pod"+uidG, "memory.limit_in_bytes"):                     "201326592",
		filepath.Join(cpu, "burstable", "pod"+uidB, "cpu.shares"):                   "307",
		filepath.Join(cpu, "besteffort", "pod"+uidBE, "cpu.shares"):                 "2",
		filepath.Join(mem, "burstable", "pod"+uidPL, "memory.limit_in_bytes"):       "276824064",
		filepath.Join(root, "cpuset", "t1", "kubepods", "burstable", "cpuset.cpus"): "0-1",
	}
	for p, want := range checks {
		if got := read(t, p); got != want {
			t.Errorf("%s = %q, want %q", strings.TrimPrefix(p, root), got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(mem, "burstable", "pod"+uidB, "memory.limit_in_bytes")); err == nil {
		t.Error("a burstable pod without memory limits got one")
	}

	// A resize: the burstable pod gets limits everywhere.
	resized := testPod(uidB, ctr(rl("100m", "32Mi"), rl("1", "64Mi")), ctr(rl("200m", ""), rl("500m", "32Mi")))
	for _, stage := range []string{StageMemory, StageCPU} {
		for _, grow := range []bool{true, false} {
			if err := m.ResizeStage(resized, stage, grow); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := read(t, filepath.Join(cpu, "burstable", "pod"+uidB, "cpu.cfs_quota_us")); got != "150000" {
		t.Errorf("after the resize quota = %s, want 150000", got)
	}
	if got := read(t, filepath.Join(mem, "burstable", "pod"+uidB, "memory.limit_in_bytes")); got != "100663296" {
		t.Errorf("after the resize memory = %s, want 100663296", got)
	}

	// runc makes the cgroup parent in a hybrid host's cgroup2 tree too.
	mustWrite(t, filepath.Join(root, "unified", "t1", "kubepods", "burstable", "pod"+uidB, "ctr", "cgroup.procs"), "")
	if err := m.Remove(uidB); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "unified", "t1", "kubepods", "burstable", "pod"+uidB)); err == nil {
		t.Error("the pod cgroup runc made in the hybrid tree was left")
	}
	for _, h := range []string{"cpu,cpuacct", "memory", "pids", "cpuset", "systemd"} {
		if _, err := os.Stat(filepath.Join(root, h, "t1", "kubepods", "burstable", "pod"+uidB)); err == nil {
			t.Errorf("%s: pod cgroup left after Remove", h)
		}
	}
	if got := read(t, filepath.Join(cpu, "burstable", "cpu.shares")); got != "358" {
		t.Errorf("burstable shares after Remove = %s, want 358", got)
	}
	if err := m.Remove(uidB); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// Pinned by.
func TestManagerV2Systemd(t *testing.T) {
	root := fakeV2(t)
	m, err := New(Options{FSRoot: root, Driver: Systemd, NodeMilliCPU: 4000, NodePIDs: 4194304})
	if err != nil {
		t.Fatal(err)
	}
	if !m.V2() {
		t.Fatal("a v2 tree read as v1")
	}
	parent, err := m.Ensure(podLevel)
	if err != nil {
		t.Fatal(err)
	}
	want := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_aaaa_4bbb_8ccc_000000000004.slice"
	if parent != want {
		t.Fatalf("parent %s, want %s", parent, want)
	}
	node := filepath.Join(root, "kubepods.slice")
	checks := map[string]string{
		filepath.Join(root, "cgroup.subtree_control"):                  "+cpuset +cpu +io +memory +hugetlb +pids",
		filepath.Join(node, "cpu.weight"):                              "157", // shares 4096
		filepath.Join(node, "memory.min"):                              "0",
		filepath.Join(node, "pids.max"):                                "4194304",
		filepath.Join(node, "kubepods-burstable.slice", "memory.low"):  "0",
		filepath.Join(node, "kubepods-burstable.slice", "cpu.weight"):  "14",
		filepath.Join(node, "kubepods-besteffort.slice", "cpu.weight"): "1",
		filepath.Join(root, parent, "cpu.max"):                         "155000 100000",
		filepath.Join(root, parent, "memory.max"):                      "276824064",
		filepath.Join(root, parent, "memory.high"):                     "256688128",
	}
	for p, want := range checks {
		if got := read(t, p); got != want {
			t.Errorf("%s = %q, want %q", strings.TrimPrefix(p, root), got, want)
		}
	}
}

// Pinned by.
func TestInitRemovesPodsNoLongerThere(t *testing.T) {
	root := fakeV1(t)
	m, err := New(Options{FSRoot: root, CgroupRoot: "/t2", Driver: Cgroupfs})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*syncpodv1.Pod{guaranteed, burstable, bestEffort} {
		if _, err := m.Ensure(p); err != nil {
			t.Fatal(err)
		}
	}
	// A container cgroup the runtime left under a pod.
	mustWrite(t, filepath.Join(root, "memory", "t2", "kubepods", "burstable", "pod"+uidB, "abc", "cgroup.procs"), "")
	again, err := New(Options{FSRoot: root, CgroupRoot: "/t2", Driver: Cgroupfs})
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Init(func(uid string) bool { return uid == uidG }); err != nil {
		t.Fatal(err)
	}
	kp := filepath.Join(root, "memory", "t2", "kubepods")
	if _, err := os.Stat(filepath.Join(kp, "pod"+uidG)); err != nil {
		t.Error("the kept pod's cgroup was removed")
	}
	for _, gone := range []string{"burstable/pod" + uidB, "besteffort/pod" + uidBE} {
		if _, err := os.Stat(filepath.Join(kp, gone)); err == nil {
			t.Errorf("%s left", gone)
		}
	}
	for _, stays := range []string{"burstable", "besteffort"} {
		if _, err := os.Stat(filepath.Join(kp, stays)); err != nil {
			t.Errorf("QoS cgroup %s removed", stays)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	root := fakeV1(t)
	for name, o := range map[string]Options{
		"no driver":  {FSRoot: root},
		"bad root":   {FSRoot: root, Driver: Cgroupfs, CgroupRoot: "/a/../b"},
		"no cgroups": {FSRoot: t.TempDir(), Driver: Cgroupfs},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Pinned by: every cgroup version with every driver,
// the Guaranteed pod's cgroup where its name says, with its values in
// that version's files.
func TestEveryVersionAndDriver(t *testing.T) {
	for _, tt := range []struct {
		name   string
		v2     bool
		driver Driver
		dir    string // the pod cgroup under the CPU controller's tree
		files  map[string]string
	}{
		{"v1 cgroupfs", false, Cgroupfs, "cpu,cpuacct/r/kubepods/pod" + uidG,
			map[string]string{"cpu.shares": "768", "cpu.cfs_quota_us": "75000"}},
		{"v1 systemd", false, Systemd, "cpu,cpuacct/r.slice/r-kubepods.slice/r-kubepods-pod0f1e2d3c_aaaa_4bbb_8ccc_000000000001.slice",
			map[string]string{"cpu.shares": "768", "cpu.cfs_quota_us": "75000"}},
		{"v2 cgroupfs", true, Cgroupfs, "r/kubepods/pod" + uidG,
			map[string]string{"cpu.weight": "30", "cpu.max": "75000 100000", "memory.max": "201326592"}},
		{"v2 systemd", true, Systemd, "r.slice/r-kubepods.slice/r-kubepods-pod0f1e2d3c_aaaa_4bbb_8ccc_000000000001.slice",
			map[string]string{"cpu.weight": "30", "cpu.max": "75000 100000", "memory.max": "201326592"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeV1(t)
			if tt.v2 {
				root = fakeV2(t)
			}
			m, err := New(Options{FSRoot: root, CgroupRoot: "/r", Driver: tt.driver})
			if err != nil {
				t.Fatal(err)
			}
			parent, err := m.Ensure(guaranteed)
			if err != nil {
				t.Fatal(err)
			}
			if want := "/" + strings.SplitN(tt.dir, "/", 2)[1]; tt.v2 && parent != "/"+tt.dir || !tt.v2 && parent != want {
				t.Errorf("parent %s for %s", parent, tt.dir)
			}
			for f, want := range tt.files {
				if got := read(t, filepath.Join(root, tt.dir, f)); got != want {
					t.Errorf("%s = %q, want %q", f, got, want)
				}
			}
			if err := m.Remove(uidG); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(root, tt.dir)); err == nil {
				t.Error("left after Remove")
			}
		})
	}
}
