package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	"github.com/syncpod/syncpod/internal/cgrouptest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// memAvailable is the host's MemAvailable, in bytes.
func memAvailable(t *testing.T) int64 {
	t.Helper()
	return meminfo(t, "MemAvailable:")
}

// meminfo is a line of /proc/meminfo, in bytes.
func meminfo(t *testing.T, key string) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/meminfo", key)
	return 0
}

// cgroupWorkingSet is a v1 memory cgroup's usage less its inactive file
// cache, in bytes.
func cgroupWorkingSet(t *testing.T, dir string) int64 {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(read("memory.usage_in_bytes")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(read("memory.stat")) {
		if v, ok := strings.CutPrefix(line, "total_inactive_file "); ok {
			inactive, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return usage - min(inactive, usage)
		}
	}
	return usage
}

// TestMemoryPressureEvictsTheBestEffortHogOnContainerd:
// with a memory.available threshold set just under what the host has, a
// BestEffort pod that takes about 6 GiB is evicted (Failed, reason
// Evicted, the kubelet's message naming memory and the hog's usage, a
// Warning event, its containers stopped in containerd) and the Guaranteed
// pod beside it keeps running; once the hog's memory is back nothing else
// is evicted. The node's pods live under a cgroup root of the test's own
// and the planner reads memory.available from it
// (--eviction-memory-cgroup), so the host's other memory (make test runs
// other suites beside this one) neither triggers nor hides the pressure.
func TestMemoryPressureEvictsTheBestEffortHogOnContainerd(t *testing.T) {
	endpoint := nodeOnContainerd(t) // skips loudly, or fails in CI/as root
	cgrouptest.RequireV1Memory(t)
	// Half the hog is the margin both ways: 3 GiB.
	const hogBytes = 3 * 2000 << 20
	// Removed after the node's cleanups (registered before them).
	root := cgrouptest.PrivateRoot(t)
	memCgroup := filepath.Join(cgrouptest.V1Mount, "memory", root)
	if err := os.MkdirAll(memCgroup, 0o755); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, nodeOptions{criEndpoint: endpoint,
		executorArgs: []string{"--cgroups-per-qos=true", "--cgroup-root=/" + root}})
	busybox := containerdtest.BusyboxImage()
	g := pod("ev-guaranteed", &syncpodv1.Container{Name: "app", Image: busybox,
		Command:         []string{"sh", "-c", "while true; do sleep 1; done"},
		ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER,
		Resources: &syncpodv1.ResourceRequirements{
			Requests: &syncpodv1.ResourceList{Cpu: "100m", Memory: "64Mi"},
			Limits:   &syncpodv1.ResourceList{Cpu: "100m", Memory: "64Mi"},
		}})
	g.Spec.HostNetwork = true
	n.apply(g)
	gr0 := n.waitRunning("ev-guaranteed", time.Minute)
	if _, err := os.Stat(filepath.Join(memCgroup, "kubepods", "pod"+gr0.GetPod().GetUid())); err != nil {
		t.Fatalf("the Guaranteed pod's cgroup is not under the test's root: %v", err)
	}
	// The usage the ranking reads. (The processes per pod come from the
	// sandbox's stats, which containerd reports only for a sandbox in a
	// pod cgroup; these nodes run without them.)
	eventually(t, 30*time.Second, "the Guaranteed pod's usage measured", func() (bool, string) {
		resp, err := n.pods.ListPodStats(rpcCtx(t), &plannerv1.ListPodStatsRequest{Namespace: "default"})
		if err != nil {
			return false, err.Error()
		}
		for _, st := range resp.GetStats() {
			if st.GetPodName() == "ev-guaranteed" {
				return st.GetMemoryWorkingSetBytes() > 0, fmt.Sprintf("%v", st)
			}
		}
		return false, "no stats"
	})

	// With the node and the Guaranteed pod up, the threshold goes half the
	// hog under what the node's cgroup leaves of the host's memory now:
	// the hog crosses it, nothing outside the cgroup counts. The planner
	// starts again with it, on the same database.
	if host := memAvailable(t); host < 2*hogBytes {
		t.Skipf("the host has %d MiB available; the test needs twice the hog's %d MiB", host>>20, hogBytes>>20)
	}
	avail := meminfo(t, "MemTotal:") - cgroupWorkingSet(t, memCgroup)
	threshold := avail - hogBytes/2
	n.killPlannerWhile(func() {
		n.plannerArgs = append(n.plannerArgs, fmt.Sprintf("--eviction-hard=memory.available<%dMi", threshold>>20),
			"--eviction-memory-cgroup="+memCgroup)
	})
	n.waitRunning("ev-guaranteed", time.Minute)

	// Each dd fills a 2000 MiB buffer from /dev/zero and then blocks
	// writing it to a reader that never reads: the memory stays in use
	// until killed.
	hog := pod("ev-hog", &syncpodv1.Container{Name: "hog", Image: busybox,
		Command: []string{"sh", "-c", "dd if=/dev/zero bs=2000M count=1 | sleep 3600 & " +
			"dd if=/dev/zero bs=2000M count=1 | sleep 3600 & dd if=/dev/zero bs=2000M count=1 | sleep 3600 & wait"},
		ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER})
	hog.Spec.HostNetwork = true
	hog.Spec.TerminationGracePeriodSeconds = new(int64(30))
	n.apply(hog)

	rec := n.waitRecord("ev-hog", 2*time.Minute, "Failed with reason Evicted", func(r *plannerv1.PodRecord) bool {
		return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_FAILED && r.GetStatus().GetReason() == "Evicted"
	})
	msg := rec.GetStatus().GetMessage()
	prefix := fmt.Sprintf("The node was low on resource: memory. Threshold quantity: %dMi, available: ", threshold>>20)
	if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, "Container hog was using ") ||
		!strings.HasSuffix(msg, ", request is 0, has larger consumption of memory. ") {
		t.Errorf("message %q, want %q... Container hog was using ..., request is 0, ...", msg, prefix)
	}
	events := 0
	for _, ev := range rec.GetEvents() {
		if ev.GetReason() == "Evicted" && ev.GetType() == syncpodv1.EventType_EVENT_TYPE_WARNING && ev.GetMessage() == msg {
			events++
		}
	}
	if events != 1 {
		t.Errorf("%d Warning Evicted events with the message, want 1: %v", events, rec.GetEvents())
	}
	eventually(t, time.Minute, "the hog's containers stopped in containerd", func() (bool, string) {
		_, cs := n.runtimeOf(rec.GetPod().GetUid())
		for _, c := range cs {
			if c.GetState().String() == "CONTAINER_RUNNING" {
				return false, c.GetId() + " running"
			}
		}
		return true, ""
	})
	// Five more eviction rounds (one per 2 s) with the memory back: the
	// Guaranteed pod stays Running throughout.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(150 * time.Millisecond) {
		gr, err := n.get("ev-guaranteed")
		if err != nil {
			t.Fatal(err)
		}
		if st := gr.GetStatus(); st.GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING || st.GetReason() != "" {
			t.Fatalf("the Guaranteed pod: %v %q %q, want Running", st.GetPhase(), st.GetReason(), st.GetMessage())
		}
	}
	t.Logf("evicted with %q (the node's cgroup left %d MiB at the start, %d MiB now; host MemAvailable %d MiB)",
		msg, avail>>20, (meminfo(t, "MemTotal:")-cgroupWorkingSet(t, memCgroup))>>20, memAvailable(t)>>20)

	// The pods go, and their cgroups with their sandboxes, before the
	// test's cgroup root is removed.
	for _, name := range []string{"ev-guaranteed", "ev-hog"} {
		if _, err := n.pods.DeletePod(rpcCtx(t), &plannerv1.DeletePodRequest{Pod: &plannerv1.PodRef{Namespace: "default", Name: name}}); err != nil {
			t.Fatalf("DeletePod %s: %v", name, err)
		}
	}
	for _, uid := range []string{gr0.GetPod().GetUid(), rec.GetPod().GetUid()} {
		eventually(t, 2*time.Minute, "pod "+uid+"'s sandboxes removed", func() (bool, string) {
			sbs, _ := n.runtimeOf(uid)
			return len(sbs) == 0, fmt.Sprintf("%d sandboxes", len(sbs))
		})
	}
}
