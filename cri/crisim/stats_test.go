package crisim

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStatsSamplerRate(t *testing.T) {
	s := newStatsSampler()
	// First reading: the average since the start (1 s of CPU in 2 s).
	if got := s.rate("c", 3e9, 1e9, 1e9); got != 5e8 {
		t.Fatalf("first rate %d, want 5e8 nanocores", got)
	}
	// Then the rate since the previous reading (2 s of CPU in 1 s: 2 cores).
	if got := s.rate("c", 4e9, 3e9, 1e9); got != 2e9 {
		t.Fatalf("second rate %d, want 2e9", got)
	}
	// A reading at the same instant gives no rate rather than a division by zero.
	if got := s.rate("c", 4e9, 3e9, 4e9); got != 0 {
		t.Fatalf("rate over no time %d, want 0", got)
	}
	s.forget(map[string]bool{})
	if len(s.prev) != 0 {
		t.Fatal("forget kept a reading")
	}
}

// A busy loop shows CPU use and resident memory; a sleeping sibling in
// the same sandbox shows up in the sandbox's sums.
func TestContainerStatsOfABusyLoop(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	busyLoopStats(t, r)
}

// With a state dir, containers run under a shim: their stats come from
// the same process group.
func TestContainerStatsOfABusyLoopUnderAShim(t *testing.T) {
	busyLoopStats(t, persistent(t, ModeProcess, t.TempDir()))
}

func busyLoopStats(t *testing.T, r *Runtime) {
	t.Helper()
	ctx := context.Background()
	sb := sandboxFor(t, r, "busy")
	busy, err := containerIn(t, r, sb, "busy", []string{"sh", "-c", "while :; do :; done"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := containerIn(t, r, sb, "idle", []string{"sleep", "60"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{busy, idle} {
		if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := r.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: busy})
		if err != nil {
			t.Fatal(err)
		}
		st := resp.GetStats()
		if st.GetCpu().GetUsageCoreNanoSeconds().GetValue() > 0 && st.GetCpu().GetUsageNanoCores().GetValue() > 0 {
			if st.GetMemory().GetRssBytes().GetValue() == 0 || st.GetMemory().GetWorkingSetBytes().GetValue() == 0 {
				t.Fatalf("a running process has no resident memory: %v", st.GetMemory())
			}
			if st.GetAttributes().GetMetadata().GetName() != "busy" {
				t.Fatalf("attributes %v", st.GetAttributes())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no CPU use seen for a busy loop: %v", st.GetCpu())
		}
		time.Sleep(50 * time.Millisecond)
	}
	list, err := r.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{PodSandboxId: sb}})
	if err != nil || len(list.GetStats()) != 2 {
		t.Fatalf("ListContainerStats: %v, %d stats", err, len(list.GetStats()))
	}
	only, err := r.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{Id: idle}})
	if err != nil || len(only.GetStats()) != 1 || only.GetStats()[0].GetAttributes().GetId() != idle {
		t.Fatalf("ListContainerStats by id: %v %v", err, only)
	}
	sbStats, err := r.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: sb})
	if err != nil {
		t.Fatal(err)
	}
	l := sbStats.GetStats().GetLinux()
	if len(l.GetContainers()) != 2 || l.GetCpu().GetUsageCoreNanoSeconds().GetValue() == 0 || l.GetProcess().GetProcessCount().GetValue() < 2 {
		t.Fatalf("sandbox stats: %v", l)
	}
	if _, err := r.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: "nosuch"}); err == nil {
		t.Fatal("stats of an unknown container")
	}
	if _, err := r.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: "nosuch"}); err == nil {
		t.Fatal("stats of an unknown sandbox")
	}
}
