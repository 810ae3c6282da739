package podresources_test

import (
	"testing"

	"github.com/syncpod/syncpod/proto/podresources"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func rl(cpu, mem string) *syncpodv1.ResourceList {
	return &syncpodv1.ResourceList{Cpu: cpu, Memory: mem}
}

func ctr(name string, req, lim *syncpodv1.ResourceList) *syncpodv1.Container {
	return &syncpodv1.Container{Name: name, Resources: &syncpodv1.ResourceRequirements{Requests: req, Limits: lim}}
}

func sidecar(c *syncpodv1.Container) *syncpodv1.Container {
	c.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	return c
}

type podOpt func(*syncpodv1.PodSpec)

func pod(opts ...podOpt) *syncpodv1.Pod {
	s := &syncpodv1.PodSpec{}
	for _, o := range opts {
		o(s)
	}
	return &syncpodv1.Pod{Uid: "u", Spec: s}
}

func containers(cs ...*syncpodv1.Container) podOpt {
	return func(s *syncpodv1.PodSpec) { s.Containers = append(s.Containers, cs...) }
}

func inits(cs ...*syncpodv1.Container) podOpt {
	return func(s *syncpodv1.PodSpec) { s.InitContainers = append(s.InitContainers, cs...) }
}

func podLevel(req, lim *syncpodv1.ResourceList) podOpt {
	return func(s *syncpodv1.PodSpec) { s.Resources = &syncpodv1.ResourceRequirements{Requests: req, Limits: lim} }
}

func overhead(o *syncpodv1.ResourceList) podOpt {
	return func(s *syncpodv1.PodSpec) { s.Overhead = o }
}

const mi = 1 << 20

// Pinned by.
func TestQOS(t *testing.T) {
	tests := []struct {
		name string
		pod  *syncpodv1.Pod
		want podresources.QOSClass
	}{
		{"nothing set", pod(containers(ctr("a", nil, nil))), podresources.BestEffort},
		{"limits only are guaranteed (requests default to them)", pod(containers(ctr("a", nil, rl("1", "64Mi")))), podresources.Guaranteed},
		{"requests equal limits", pod(containers(ctr("a", rl("500m", "64Mi"), rl("0.5", "64Mi")))), podresources.Guaranteed},
		{"cpu only", pod(containers(ctr("a", nil, rl("1", "")))), podresources.Burstable},
		{"request below limit", pod(containers(ctr("a", rl("100m", "64Mi"), rl("1", "64Mi")))), podresources.Burstable},
		{"guaranteed and best-effort containers", pod(containers(ctr("a", nil, rl("1", "64Mi")), ctr("b", nil, nil))), podresources.Burstable},
		{"an init container counts", pod(inits(ctr("i", rl("100m", ""), nil)), containers(ctr("a", nil, nil))), podresources.Burstable},
		{"explicit zero request is best effort", pod(containers(ctr("a", rl("0", ""), nil))), podresources.BestEffort},
		{"pod-level limits decide: guaranteed", pod(podLevel(nil, rl("1", "128Mi")), containers(ctr("a", nil, nil))), podresources.Guaranteed},
		{"pod-level request defaults to the containers' below the limit", pod(podLevel(nil, rl("1", "128Mi")), containers(ctr("a", rl("100m", ""), nil))), podresources.Burstable},
		{"pod-level request only: burstable", pod(podLevel(rl("1", ""), nil), containers(ctr("a", nil, rl("2", "1Gi")))), podresources.Burstable},
		{"pod-level requests and limits equal for both", pod(podLevel(rl("1", "1Gi"), rl("1", "1Gi")), containers(ctr("a", nil, nil))), podresources.Guaranteed},
		{"pod-level memory only, containers guaranteed", pod(podLevel(nil, rl("", "1Gi")), containers(ctr("a", nil, rl("1", "512Mi")))), podresources.Burstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podresources.QOS(tt.pod); got != tt.want {
				t.Errorf("QOS = %s, want %s", got, tt.want)
			}
		})
	}
}

// Pinned by.
func TestPodTotals(t *testing.T) {
	tests := []struct {
		name               string
		pod                *syncpodv1.Pod
		reqCPU, reqMem     int64
		limCPU, limMem     int64
		hasLimCPU, hasLimM bool
	}{
		{
			name:   "two containers add up",
			pod:    pod(containers(ctr("a", rl("100m", "10Mi"), rl("200m", "20Mi")), ctr("b", rl("300m", "30Mi"), rl("400m", "40Mi")))),
			reqCPU: 400, reqMem: 40 * mi, limCPU: 600, limMem: 60 * mi, hasLimCPU: true, hasLimM: true,
		},
		{
			name:   "an init container larger than the rest wins",
			pod:    pod(inits(ctr("i", rl("2", "1Gi"), nil)), containers(ctr("a", rl("100m", "10Mi"), nil))),
			reqCPU: 2000, reqMem: 1024 * mi,
		},
		{
			// sidecar 100m runs beside the init container after it (100m +
			// 500m) and beside the regular one (100m + 200m).
			name:   "sidecars add to later init containers and to the regular ones",
			pod:    pod(inits(sidecar(ctr("s", rl("100m", ""), nil)), ctr("i", rl("500m", ""), nil)), containers(ctr("a", rl("200m", ""), nil))),
			reqCPU: 600,
		},
		{
			name:   "overhead adds to requests and to set limits",
			pod:    pod(overhead(rl("250m", "64Mi")), containers(ctr("a", rl("", "100Mi"), rl("1", "")))),
			reqCPU: 1250, reqMem: 164 * mi, limCPU: 1250, hasLimCPU: true,
		},
		{
			name:   "pod-level values replace the containers'",
			pod:    pod(podLevel(rl("1", "256Mi"), rl("2", "512Mi")), containers(ctr("a", rl("100m", "10Mi"), nil))),
			reqCPU: 1000, reqMem: 256 * mi, limCPU: 2000, limMem: 512 * mi, hasLimCPU: true, hasLimM: true,
		},
		{
			name:   "unset pod-level request is the containers' aggregate",
			pod:    pod(podLevel(nil, rl("2", "1Gi")), containers(ctr("a", rl("300m", "100Mi"), nil), ctr("b", rl("200m", ""), nil))),
			reqCPU: 500, reqMem: 100 * mi, limCPU: 2000, limMem: 1024 * mi, hasLimCPU: true, hasLimM: true,
		},
		{
			name:   "unset pod-level request with no container request is the limit",
			pod:    pod(podLevel(nil, rl("2", "")), containers(ctr("a", nil, nil))),
			reqCPU: 2000, limCPU: 2000, hasLimCPU: true,
		},
		{
			name:   "unset pod-level limit when every container limits it",
			pod:    pod(podLevel(rl("1", ""), nil), containers(ctr("a", nil, rl("700m", "")), ctr("b", nil, rl("600m", "")))),
			reqCPU: 1000, limCPU: 1300, hasLimCPU: true,
		},
		{
			name:   "unset pod-level limit stays unset when a container has none",
			pod:    pod(podLevel(rl("1", ""), nil), containers(ctr("a", nil, rl("700m", "")), ctr("b", nil, nil))),
			reqCPU: 1000, limCPU: 700, hasLimCPU: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := podresources.PodRequests(tt.pod, podresources.Options{})
			lim := podresources.PodLimits(tt.pod, podresources.Options{})
			if req.MilliCPU != tt.reqCPU || req.Memory != tt.reqMem {
				t.Errorf("requests = %dm %d, want %dm %d", req.MilliCPU, req.Memory, tt.reqCPU, tt.reqMem)
			}
			if lim.MilliCPU != tt.limCPU || lim.Memory != tt.limMem || lim.HasCPU != tt.hasLimCPU || lim.HasMemory != tt.hasLimM {
				t.Errorf("limits = %+v, want %dm (%v) %d (%v)", lim, tt.limCPU, tt.hasLimCPU, tt.limMem, tt.hasLimM)
			}
		})
	}
}

func TestOverheadExcluded(t *testing.T) {
	p := pod(overhead(rl("250m", "64Mi")), containers(ctr("a", rl("100m", "10Mi"), rl("1", "20Mi"))))
	req := podresources.PodRequests(p, podresources.Options{ExcludeOverhead: true})
	lim := podresources.PodLimits(p, podresources.Options{ExcludeOverhead: true})
	if req.MilliCPU != 100 || req.Memory != 10*mi || lim.MilliCPU != 1000 || lim.Memory != 20*mi {
		t.Errorf("without overhead: requests %+v limits %+v", req, lim)
	}
}

func TestLimitsDeclared(t *testing.T) {
	tests := []struct {
		name     string
		pod      *syncpodv1.Pod
		cpu, mem bool
	}{
		{"every container limits both", pod(containers(ctr("a", nil, rl("1", "1Mi")), ctr("b", nil, rl("1", "1Mi")))), true, true},
		{"one container has no memory limit", pod(containers(ctr("a", nil, rl("1", "1Mi")), ctr("b", nil, rl("1", "")))), true, false},
		{"an init container without limits", pod(inits(ctr("i", nil, nil)), containers(ctr("a", nil, rl("1", "1Mi")))), false, false},
		{"a pod-level limit declares it", pod(podLevel(nil, rl("", "1Gi")), containers(ctr("a", nil, nil))), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cpu, mem := podresources.LimitsDeclared(tt.pod)
			if cpu != tt.cpu || mem != tt.mem {
				t.Errorf("LimitsDeclared = %v, %v; want %v, %v", cpu, mem, tt.cpu, tt.mem)
			}
		})
	}
}
