package observe

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// the runtime's stop signal is kept in Kubernetes' spelling; a
// runtime that reports none (RUNTIME_DEFAULT) leaves it empty.
func TestContainerKeepsTheRuntimesStopSignal(t *testing.T) {
	for sig, want := range map[runtimeapi.Signal]string{
		runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT: "",
		runtimeapi.Signal_SIGNAL_SIGTERM:         "SIGTERM",
		runtimeapi.Signal_SIGNAL_SIGUSR1:         "SIGUSR1",
		runtimeapi.Signal_SIGNAL_SIGRTMINPLUS15:  "SIGRTMIN+15",
		runtimeapi.Signal_SIGNAL_SIGRTMAXMINUS14: "SIGRTMAX-14",
		runtimeapi.Signal_SIGNAL_SIGRTMAX:        "SIGRTMAX",
		runtimeapi.Signal(999):                   "",
	} {
		c := container("c1", 1, runtimeapi.ContainerState_CONTAINER_RUNNING)
		c.StopSignal = sig
		if got := Container(c, "sb").GetStopSignal(); got != want {
			t.Errorf("%v: %q, want %q", sig, got, want)
		}
	}
}
