package validation_test

import (
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// TestGRPCProbePortIsCheckedAsTheAPIServerDoes: a grpc probe is a
// handler of its own, valid with a port from 1 to 65535 and any service
// name; a port outside that range is refused with its path.
func TestGRPCProbePortIsCheckedAsTheAPIServerDoes(t *testing.T) {
	withProbe := func(port int32, service string) *syncpodv1.Pod {
		p := secPod()
		p.Spec.Containers[0].LivenessProbe = &syncpodv1.Probe{Handler: &syncpodv1.Probe_Grpc{Grpc: &syncpodv1.GRPCAction{Port: port, Service: service}}}
		p.Spec.Containers[0].ReadinessProbe = &syncpodv1.Probe{Handler: &syncpodv1.Probe_Grpc{Grpc: &syncpodv1.GRPCAction{Port: port, Tls: true}}}
		return p
	}
	for _, port := range []int32{1, 5000, 65535} {
		if err := validation.Pod(withProbe(port, "grpc.health.v1.Health")); err != nil {
			t.Errorf("port %d: %v", port, err)
		}
	}
	for _, port := range []int32{0, -1, 65536} {
		var got []string
		for _, fe := range fielderr.As(validation.Pod(withProbe(port, ""))) {
			got = append(got, fe.Path+": "+fe.Message)
		}
		want := []string{
			"spec.containers[0].liveness_probe.grpc.port: must be between 1 and 65535",
			"spec.containers[0].readiness_probe.grpc.port: must be between 1 and 65535",
		}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("port %d: %q, want %q", port, got, want)
		}
	}
}
