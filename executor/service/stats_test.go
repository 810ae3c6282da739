package service

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

func TestSumPodStats(t *testing.T) {
	ctr := func(id, pod, name string) *runtimeapi.Container {
		return &runtimeapi.Container{Id: id, Labels: map[string]string{crilabels.PodUID: pod, crilabels.PodName: "p-" + pod, crilabels.ContainerName: name}}
	}
	stat := func(cpu, mem uint64) *runtimeapi.ContainerStats {
		return &runtimeapi.ContainerStats{Cpu: &runtimeapi.CpuUsage{UsageNanoCores: &runtimeapi.UInt64Value{Value: cpu}},
			Memory: &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: mem}}}
	}
	running := []*runtimeapi.Container{ctr("c3", "b", "z"), ctr("c1", "a", "web"), ctr("c2", "a", "side"), ctr("c4", "c", "x"), {Id: "foreign"}}
	byID := map[string]*runtimeapi.ContainerStats{"c1": stat(100, 10), "c2": stat(50, 5), "c3": stat(7, 1)}
	byID["c1"].WritableLayer = &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: 4096}, InodesUsed: &runtimeapi.UInt64Value{Value: 3}}
	byID["c2"].WritableLayer = &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: 1024}, InodesUsed: &runtimeapi.UInt64Value{Value: 2}}
	running[1].CreatedAt = 1_700_000_000_000_000_001
	byID["c1"].Cpu.Timestamp, byID["c1"].Cpu.UsageCoreNanoSeconds = 1_700_000_100_000_000_000, &runtimeapi.UInt64Value{Value: 9_000}
	byID["c2"].Cpu.UsageCoreNanoSeconds = &runtimeapi.UInt64Value{Value: 1_000}
	byID["c1"].Memory.Timestamp, byID["c1"].Memory.UsageBytes = 1_700_000_100_000_000_002, &runtimeapi.UInt64Value{Value: 12}
	got := sumPodStats(running, byID, nil)
	t.Run("times, CPU time and memory usage", func(t *testing.T) {
		web, side := got[0].GetContainers()[1], got[0].GetContainers()[0]
		if web.GetStartTime().AsTime().UnixNano() != 1_700_000_000_000_000_001 || web.GetCpuTime().AsTime().UnixNano() != 1_700_000_100_000_000_000 ||
			web.GetMemoryTime().AsTime().UnixNano() != 1_700_000_100_000_000_002 || web.GetMemoryUsageBytes() != 12 {
			t.Errorf("web: %v", web)
		}
		if side.GetStartTime() != nil || side.GetCpuTime() != nil || side.GetMemoryTime() != nil {
			t.Errorf("side, whose runtime gave no times: %v, want them unset", side)
		}
		if got[0].GetCpuUsageCoreNanoseconds() != 10_000 {
			t.Errorf("pod a's CPU time %d, want the sum 10000", got[0].GetCpuUsageCoreNanoseconds())
		}
	})
	if len(got) != 3 || got[0].GetPodUid() != "a" || got[0].GetCpuNanoCores() != 150 || got[0].GetMemoryWorkingSetBytes() != 15 ||
		got[0].GetContainers()[0].GetName() != "side" || got[0].GetPodName() != "p-a" || got[2].GetCpuNanoCores() != 0 ||
		got[0].GetWritableLayerBytes() != 5120 || got[0].GetWritableLayerInodes() != 5 || got[0].GetContainers()[1].GetWritableLayerBytes() != 4096 {
		for _, p := range got {
			t.Log(prototext.Format(p))
		}
		t.Fatal("sums by pod are wrong")
	}
	if only := sumPodStats(running, byID, []string{"b"}); len(only) != 1 || only[0].GetPodUid() != "b" {
		t.Fatalf("filtered: %v", only)
	}
	sb := func(pod string, procs uint64) *runtimeapi.PodSandboxStats {
		return &runtimeapi.PodSandboxStats{Attributes: &runtimeapi.PodSandboxAttributes{Labels: map[string]string{crilabels.PodUID: pod}},
			Linux: &runtimeapi.LinuxPodSandboxStats{Process: &runtimeapi.ProcessUsage{ProcessCount: &runtimeapi.UInt64Value{Value: procs}}}}
	}
	addProcessCounts(got, []*runtimeapi.PodSandboxStats{sb("a", 7), sb("b", 2), sb("gone", 9), {}})
	if got[0].GetProcessCount() != 7 || got[1].GetProcessCount() != 2 || got[2].GetProcessCount() != 0 {
		t.Errorf("process counts %d %d %d, want 7 2 0", got[0].GetProcessCount(), got[1].GetProcessCount(), got[2].GetProcessCount())
	}
}

func TestValidateStreamingStarts(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"exec without start", ValidateExecStart(nil), "start: required in the first message"},
		{"exec empty", ValidateExecStart(&executorv1.ExecStart{}), "start.container_id: required; start.command: required"},
		{"port-forward without start", ValidatePortForwardStart(nil), "start: required in the first message"},
		{"port-forward bad port", ValidatePortForwardStart(&executorv1.PortForwardStart{PodUid: "u", Port: 70000}), "start.port: must be 1-65535, got 70000"},
		{"port-forward empty", ValidatePortForwardStart(&executorv1.PortForwardStart{}), "start.pod_uid: required; start.port: must be 1-65535, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, fielderr.ErrInvalid) || !strings.HasSuffix(tc.err.Error(), "field(s): "+tc.want) {
				t.Fatalf("got %v, want the field errors %q", tc.err, tc.want)
			}
		})
	}
}
