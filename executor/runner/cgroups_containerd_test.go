package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/internal/cgrouptest"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// cgroupV1 is the host's cgroup v1 mount root; the containerd test needs
// it (v2 and the systemd driver are covered on a fake tree by
// executor/cgroups).
const cgroupV1 = cgrouptest.V1Mount

func readCgroup(t *testing.T, controller, rel, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cgroupV1, controller, rel, file))
	if err != nil {
		t.Fatalf("read %s/%s/%s: %v", controller, rel, file, err)
	}
	return strings.TrimSpace(string(b))
}

// on a real containerd (cgroupfs driver, cgroup
// v1) the pods of each QoS class, and one with pod-level resources and an
// overhead, get their cgroups where the kubelet puts them, with the
// values its formulas give (worked out by hand below), their sandboxes
// inside them, and lose them with their last sandbox.
func TestContainerdPodCgroups(t *testing.T) {
	x := &real{cd: critest.RequireContainerd(t)}
	if _, err := os.Stat(filepath.Join(cgroupV1, "cpu", "cpu.shares")); err != nil {
		t.Skipf("needs cgroup v1 with the cpu controller at %s/cpu: %v", cgroupV1, err)
	}
	root := cgrouptest.PrivateRoot(t)
	x.dbPath, x.logDir = filepath.Join(t.TempDir(), "executor.db"), t.TempDir()
	x.open(t)
	t.Cleanup(func() { _ = x.store.Close() })
	const memCap = 8 << 30
	r, err := runner.New(runner.Config{
		Runtime: runtimeclient.NewRuntime(x.cd.Runtime, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Images:  runtimeclient.NewImages(x.cd.Images, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Backoff: x.store, LogDir: x.logDir, MemoryCapacity: memCap,
		Cgroups: runner.CgroupOptions{PerQOS: true, Root: "/" + root},
	})
	if err != nil {
		t.Fatal(err)
	}
	x.r = r

	rl := func(cpu, mem string) *syncpodv1.ResourceList { return &syncpodv1.ResourceList{Cpu: cpu, Memory: mem} }
	const unlimited = "no limit"
	tests := []struct {
		name     string
		req, lim *syncpodv1.ResourceList
		podLevel *syncpodv1.ResourceRequirements
		overhead *syncpodv1.ResourceList
		qosDir   string
		// shares = milliCPU*1024/1000; quota = milliCPU*100 µs
		shares, quota, memory string
	}{
		{name: "guaranteed", lim: rl("500m", "64Mi"), qosDir: "",
			shares: "512", quota: "50000", memory: "67108864"},
		{name: "burstable", req: rl("250m", "32Mi"), lim: rl("1", ""), qosDir: "burstable",
			shares: "256", quota: "100000", memory: unlimited},
		{name: "besteffort", qosDir: "besteffort",
			shares: "2", quota: "-1", memory: unlimited},
		{
			// requests 200m+100m overhead; limits 1+0.1 CPU, 128Mi+16Mi
			name:     "pod-level resources",
			podLevel: &syncpodv1.ResourceRequirements{Requests: rl("200m", "48Mi"), Limits: rl("1", "128Mi")},
			overhead: rl("100m", "16Mi"), qosDir: "burstable",
			shares: "307", quota: "110000", memory: "150994944",
		},
	}
	type made struct{ uid, rel, sandbox, ctr string }
	var pods []made
	for _, tt := range tests {
		c := sh("main", x.cd.Busybox, `trap "exit 0" TERM; while true; do sleep 0.2; done`)
		if tt.req != nil || tt.lim != nil {
			c.Resources = &syncpodv1.ResourceRequirements{Requests: tt.req, Limits: tt.lim}
		}
		pod := realPod(t, x, nil, c)
		pod.Spec.Resources, pod.Spec.Overhead = tt.podLevel, tt.overhead
		resp := x.apply(t, pod, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: start("main")})
		mustSucceed(t, resp)
		o := x.waitFor(t, pod.GetUid(), "main running", inState("main", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING))
		rel := filepath.Join(root, "kubepods", tt.qosDir, "pod"+pod.GetUid())
		pods = append(pods, made{pod.GetUid(), rel, resp.GetSandboxId(), newest(o, "main").GetId()})
		t.Run(tt.name, func(t *testing.T) {
			if got := readCgroup(t, "cpu", rel, "cpu.shares"); got != tt.shares {
				t.Errorf("cpu.shares = %s, want %s", got, tt.shares)
			}
			if got := readCgroup(t, "cpu", rel, "cpu.cfs_quota_us"); got != tt.quota {
				t.Errorf("cpu.cfs_quota_us = %s, want %s", got, tt.quota)
			}
			mem := readCgroup(t, "memory", rel, "memory.limit_in_bytes")
			if tt.memory == unlimited {
				if v, _ := strconv.ParseInt(mem, 10, 64); v < 1<<62 {
					t.Errorf("memory.limit_in_bytes = %s, want none", mem)
				}
			} else if mem != tt.memory {
				t.Errorf("memory.limit_in_bytes = %s, want %s", mem, tt.memory)
			}
			// The runtime placed the sandbox and the container inside.
			for _, id := range []string{resp.GetSandboxId(), newest(o, "main").GetId()} {
				if _, err := os.Stat(filepath.Join(cgroupV1, "memory", rel, id)); err != nil {
					ents, _ := os.ReadDir(filepath.Join(cgroupV1, "memory", rel))
					var names []string
					for _, e := range ents {
						if e.IsDir() {
							names = append(names, e.Name())
						}
					}
					t.Errorf("%s (sandbox %s) is not in the pod cgroup (%v): %v", id, resp.GetSandboxId(), names, err)
				}
			}
		})
	}

	// The QoS cgroups: Burstable pods request 250m and 300m -> 563 shares.
	node := filepath.Join(root, "kubepods")
	for _, c := range []struct{ controller, rel, file, want string }{
		{"cpu", filepath.Join(node, "burstable"), "cpu.shares", "563"},
		{"cpu", filepath.Join(node, "besteffort"), "cpu.shares", "2"},
		{"memory", node, "memory.limit_in_bytes", strconv.Itoa(memCap)},
		{"pids", node, "pids.max", readProc(t, "/proc/sys/kernel/pid_max")},
	} {
		if got := readCgroup(t, c.controller, c.rel, c.file); got != c.want {
			t.Errorf("%s %s/%s = %s, want %s", c.controller, c.rel, c.file, got, c.want)
		}
	}

	// Gone with the last sandbox, from every hierarchy.
	for _, p := range pods {
		mustSucceed(t, x.apply(t, &syncpodv1.Pod{Uid: p.uid, Name: "itest", Namespace: "syncpod-test", Spec: &syncpodv1.PodSpec{HostNetwork: true}},
			&syncpodv1.PodActions{KillPod: true}))
		if _, err := x.r.RemoveResources(context.Background(), []string{p.ctr}, []string{p.sandbox}, nil); err != nil {
			t.Fatal(err)
		}
		hs, _ := os.ReadDir(cgroupV1)
		for _, h := range hs {
			if _, err := os.Stat(filepath.Join(cgroupV1, h.Name(), p.rel)); err == nil {
				t.Errorf("%s: %s left after its last sandbox went", h.Name(), p.rel)
			}
		}
	}
	if got := readCgroup(t, "cpu", filepath.Join(node, "burstable"), "cpu.shares"); got != "2" {
		t.Errorf("burstable cpu.shares with no pods = %s, want 2", got)
	}
}

func readProc(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
