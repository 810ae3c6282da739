package runner

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// lifecycle.stopSignal reaches the CRI container config as the
// CRI's enum; none leaves the runtime's default.
func TestStopSignalReachesTheContainerConfig(t *testing.T) {
	for name, want := range map[string]runtimeapi.Signal{
		"":            runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT,
		"SIGUSR1":     runtimeapi.Signal_SIGNAL_SIGUSR1,
		"SIGTERM":     runtimeapi.Signal_SIGNAL_SIGTERM,
		"SIGRTMIN":    runtimeapi.Signal_SIGNAL_SIGRTMIN,
		"SIGRTMIN+3":  runtimeapi.Signal_SIGNAL_SIGRTMINPLUS3,
		"SIGRTMAX-14": runtimeapi.Signal_SIGNAL_SIGRTMAXMINUS14,
		"SIGRTMAX":    runtimeapi.Signal_SIGNAL_SIGRTMAX,
	} {
		pod := &syncpodv1.Pod{Name: "p", Uid: "6f1c2a8e-2b7d-4c1e-9a51-0d3e4f5a6b7c", Spec: &syncpodv1.PodSpec{Os: &syncpodv1.PodOS{Name: "linux"},
			Containers: []*syncpodv1.Container{{Name: "c", Image: "i", Lifecycle: &syncpodv1.Lifecycle{StopSignal: name}}}}}
		if err := validation.Pod(pod); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		cfg, err := ContainerConfig(pod, pod.Spec.Containers[0], false, "h", 0, ContainerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.GetStopSignal() != want {
			t.Errorf("%q: stop signal %v, want %v", name, cfg.GetStopSignal(), want)
		}
	}
	// Every name validation allows has its own CRI value.
	seen := map[runtimeapi.Signal]string{}
	for _, name := range validation.LinuxStopSignalNames() {
		s := StopSignal(name)
		if s == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
			t.Errorf("%s has no CRI value", name)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("%s and %s are both %v", name, prev, s)
		}
		seen[s] = name
	}
	if len(seen) != len(runtimeapi.Signal_name)-1 {
		t.Errorf("%d names for %d CRI signals", len(seen), len(runtimeapi.Signal_name)-1)
	}
}
