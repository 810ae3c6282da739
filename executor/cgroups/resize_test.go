package cgroups

import (
	"path/filepath"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestResizeStageGrowsBeforeAndShrinksAfter: R-25.2's pod cgroup half of
// an in-place resize on a Guaranteed pod (one container: its limits are
// the pod's): before a stage's containers change only the limits that
// rise are written, after them the final values; a limit not known to
// the manager is lifted at the grow.
func TestResizeStageGrowsBeforeAndShrinksAfter(t *testing.T) {
	root := fakeV1(t)
	m, err := New(Options{FSRoot: root, CgroupRoot: "/t1", Driver: Cgroupfs, NodeMilliCPU: 2000, NodeMemory: 4 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Init(func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	pod := func(cpu, mem string) *syncpodv1.Pod { return testPod(uidG, ctr(nil, rl(cpu, mem))) }
	if _, err := m.Ensure(pod("500m", "128Mi")); err != nil {
		t.Fatal(err)
	}
	dir := func(h string) string { return filepath.Join(root, h, "t1", "kubepods", "pod"+uidG) }
	quota := func() string { return read(t, filepath.Join(dir("cpu,cpuacct"), "cpu.cfs_quota_us")) }
	shares := func() string { return read(t, filepath.Join(dir("cpu,cpuacct"), "cpu.shares")) }
	mem := func() string { return read(t, filepath.Join(dir("memory"), "memory.limit_in_bytes")) }
	type step struct {
		name               string
		pod                *syncpodv1.Pod
		resource           string
		grow               bool
		quota, shares, mem string
	}
	for _, s := range []step{
		// Memory up, CPU down: memory is raised before its containers,
		// CPU lowered only after its containers.
		{"memory grows first", pod("250m", "256Mi"), StageMemory, true, "50000", "512", "268435456"},
		{"memory shrink writes the final value", pod("250m", "256Mi"), StageMemory, false, "50000", "512", "268435456"},
		{"a falling CPU limit waits at the grow", pod("250m", "256Mi"), StageCPU, true, "50000", "512", "268435456"},
		{"and is written at the shrink, with the shares", pod("250m", "256Mi"), StageCPU, false, "25000", "256", "268435456"},
		// Memory down, CPU up.
		{"a falling memory limit waits at the grow", pod("1", "64Mi"), StageMemory, true, "25000", "256", "268435456"},
		{"and is written at the shrink", pod("1", "64Mi"), StageMemory, false, "25000", "256", "67108864"},
		{"a rising CPU limit is written at the grow", pod("1", "64Mi"), StageCPU, true, "100000", "256", "67108864"},
		{"the shrink brings the shares", pod("1", "64Mi"), StageCPU, false, "100000", "1024", "67108864"},
	} {
		if err := m.ResizeStage(s.pod, s.resource, s.grow); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if q, sh, mm := quota(), shares(), mem(); q != s.quota || sh != s.shares || mm != s.mem {
			t.Errorf("%s: quota %s shares %s memory %s, want %s %s %s", s.name, q, sh, mm, s.quota, s.shares, s.mem)
		}
	}

	// A manager that did not make the cgroup (a restarted executor) does
	// not know the old limits: the grow lifts them until the shrink.
	m2, err := New(Options{FSRoot: root, CgroupRoot: "/t1", Driver: Cgroupfs, NodeMilliCPU: 2000, NodeMemory: 4 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.ResizeStage(pod("1", "32Mi"), StageMemory, true); err != nil {
		t.Fatal(err)
	}
	if got := mem(); got != "-1" {
		t.Errorf("grow with the old limit unknown: memory %s, want -1 (none)", got)
	}
	if err := m2.ResizeStage(pod("1", "32Mi"), StageMemory, false); err != nil {
		t.Fatal(err)
	}
	if got := mem(); got != "33554432" {
		t.Errorf("after the shrink: memory %s, want 33554432", got)
	}

	if err := m.ResizeStage(testPod("0f1e2d3c-aaaa-4bbb-8ccc-0000000000ff", ctr(nil, rl("1", "1Mi"))), StageCPU, true); err == nil {
		t.Error("a pod without a cgroup: no error")
	}
}
