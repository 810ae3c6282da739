package ctl

import (
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestDescribeShowsGRPCProbes: a grpc probe is described as
// kubectl describes it, with its port and service.
func TestDescribeShowsGRPCProbes(t *testing.T) {
	for _, tc := range []struct {
		action *syncpodv1.GRPCAction
		want   string
	}{
		{&syncpodv1.GRPCAction{Port: 5000}, "grpc <pod>:5000 delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{&syncpodv1.GRPCAction{Port: 5000, Service: "ready"}, "grpc <pod>:5000 ready delay=0s timeout=1s period=10s #success=1 #failure=3"},
	} {
		if got := probeString(&syncpodv1.Probe{Handler: &syncpodv1.Probe_Grpc{Grpc: tc.action}}); got != tc.want {
			t.Errorf("probeString = %q, want %q", got, tc.want)
		}
	}
}
