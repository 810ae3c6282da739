package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/syncpod/syncpod/cri/crilabels"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// recordingResizer records the pod resizer's calls, in order.
type recordingResizer struct {
	mu    sync.Mutex
	calls []string
	fail  string
}

func (r *recordingResizer) GrowPod(_ context.Context, _ *syncpodv1.Pod, resource string) error {
	return r.record("grow " + resource)
}

func (r *recordingResizer) ShrinkPod(_ context.Context, _ *syncpodv1.Pod, resource string) error {
	return r.record("shrink " + resource)
}

func (r *recordingResizer) record(call string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
	if call == r.fail {
		return errors.New("no room")
	}
	return nil
}

func resized(name, id, resource string, shares, quota, mem int64, decrease bool) *syncpodv1.ContainerResourceUpdate {
	return &syncpodv1.ContainerResourceUpdate{ContainerId: id, Name: name, Resource: resource, Decrease: decrease,
		Resources: &syncpodv1.LinuxResources{CpuShares: shares, CpuQuota: quota, CpuPeriod: 100000, MemoryLimitBytes: mem}}
}

// TestResizeInPlace: the updates reach the runtime
// in order, between the pod resizer's grow and shrink of each stage; the
// container keeps running with the same id and its status reports the
// new values; a memory decrease whose usage cannot be read fails the
// resize with nothing updated.
func TestResizeInPlace(t *testing.T) {
	tests := []struct {
		name       string
		updates    func(id string) []*syncpodv1.ContainerResourceUpdate
		statsErr   bool
		resizeFail string
		want       string
		wantCalls  []string
		wantLinux  [3]int64 // shares, quota, memory after the pass
	}{
		{
			name: "grow then nothing else",
			updates: func(id string) []*syncpodv1.ContainerResourceUpdate {
				return []*syncpodv1.ContainerResourceUpdate{
					resized("web", id, "memory", 2, 0, 256<<20, false),
					resized("web", id, "cpu", 1024, 200000, 256<<20, false),
				}
			},
			want:      "UPDATE_CONTAINER_RESOURCES web SUCCEEDED\nUPDATE_CONTAINER_RESOURCES web SUCCEEDED\n",
			wantCalls: []string{"grow memory", "shrink memory", "grow cpu", "shrink cpu"},
			wantLinux: [3]int64{1024, 200000, 256 << 20},
		},
		{
			name: "a memory decrease whose usage cannot be read fails it all",
			updates: func(id string) []*syncpodv1.ContainerResourceUpdate {
				return []*syncpodv1.ContainerResourceUpdate{
					resized("web", id, "memory", 2, 0, 32<<20, true),
					resized("web", id, "cpu", 512, 50000, 32<<20, true),
				}
			},
			statsErr:  true,
			want:      "UPDATE_CONTAINER_RESOURCES web FAILED ResizeError\nUPDATE_CONTAINER_RESOURCES web SKIPPED\n",
			wantLinux: [3]int64{2, 0, 0},
		},
		{
			name: "the pod cgroup refusing to grow fails the resize",
			updates: func(id string) []*syncpodv1.ContainerResourceUpdate {
				return []*syncpodv1.ContainerResourceUpdate{resized("web", id, "cpu", 1024, 0, 0, false)}
			},
			resizeFail: "grow cpu",
			want:       "UPDATE_CONTAINER_RESOURCES  FAILED ResizeError\nUPDATE_CONTAINER_RESOURCES web SKIPPED\n",
			wantCalls:  []string{"grow memory", "shrink memory", "grow cpu"},
			wantLinux:  [3]int64{2, 0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, busybox)
			pr := &recordingResizer{fail: tc.resizeFail}
			e.r.podResizer = pr
			pod := testPod(nil, ctr("web"))
			o := runningPod(t, e, pod)
			id := o.GetContainers()[0].GetId()
			if tc.statsErr {
				e.rt.InjectError("ContainerStats", errors.New("no stats"))
			}
			resp := e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: o.GetSandboxes()[0].GetId(), ContainersToUpdate: tc.updates(id)})
			if got := summary(resp); got != tc.want {
				t.Errorf("steps:\n%s\nwant:\n%s", got, tc.want)
			}
			if !slices.Equal(pr.calls, tc.wantCalls) {
				t.Errorf("pod resizer calls %v, want %v", pr.calls, tc.wantCalls)
			}
			after := e.observe(t, pod.GetUid()).GetContainers()[0]
			if after.GetId() != id || after.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
				t.Errorf("container after the resize: %s %s, want %s RUNNING", after.GetId(), after.GetState(), id)
			}
			r := after.GetResources()
			if got := [3]int64{r.GetCpuShares(), r.GetCpuQuota(), r.GetMemoryLimitBytes()}; got != tc.wantLinux {
				t.Errorf("runtime resources %v, want %v", got, tc.wantLinux)
			}
		})
	}
}

// TestContainerConfigRecordsTheResources: a container is
// created with its Linux resources and its memory request recorded, which
// a later plan compares with the pod's.
func TestContainerConfigRecordsTheResources(t *testing.T) {
	c := ctr("web")
	c.Resources = &syncpodv1.ResourceRequirements{Requests: &syncpodv1.ResourceList{Cpu: "250m", Memory: "32Mi"},
		Limits: &syncpodv1.ResourceList{Cpu: "500m", Memory: "64Mi"}}
	pod := testPod(nil, c, ctr("plain"))
	cfg, err := ContainerConfig(pod, c, false, "h", 0, ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.GetLinux().GetResources()
	if r.GetCpuShares() != 256 || r.GetCpuQuota() != 50000 || r.GetCpuPeriod() != 100000 || r.GetMemoryLimitInBytes() != 64<<20 {
		t.Errorf("linux resources %v", r)
	}
	if got := cfg.GetAnnotations()[crilabels.MemoryRequest]; got != "33554432" {
		t.Errorf("memory request annotation %q, want 33554432", got)
	}
	cfg, err = ContainerConfig(pod, pod.GetSpec().GetContainers()[1], false, "h", 0, ContainerOptions{})
	if err != nil || cfg.GetAnnotations()[crilabels.MemoryRequest] != "0" {
		t.Errorf("no memory request: annotation %q, %v; want \"0\"", cfg.GetAnnotations()[crilabels.MemoryRequest], err)
	}
}
