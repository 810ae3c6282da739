package linuxres_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/proto/linuxres"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func req(reqCPU, reqMem, limCPU, limMem string) *syncpodv1.ResourceRequirements {
	return &syncpodv1.ResourceRequirements{Requests: &syncpodv1.ResourceList{Cpu: reqCPU, Memory: reqMem},
		Limits: &syncpodv1.ResourceList{Cpu: limCPU, Memory: limMem}}
}

// TestOf: the kubelet's conversion, with its floors.
func TestOf(t *testing.T) {
	tests := []struct {
		name string
		in   *syncpodv1.ResourceRequirements
		want linuxres.Values
	}{
		{"R-25.2 nothing set: the least shares", nil, linuxres.Values{CPUShares: 2}},
		{"R-25.2 request and limits", req("500m", "64Mi", "1", "128Mi"), linuxres.Values{CPUShares: 512, CPUQuota: 100000, CPUPeriod: 100000, MemoryLimitBytes: 128 << 20}},
		{"R-25.2 the limit stands in for the request", req("", "", "250m", ""), linuxres.Values{CPUShares: 256, CPUQuota: 25000, CPUPeriod: 100000}},
		{"R-25.2 floors: 1m is 2 shares and 1 ms", req("1m", "", "5m", ""), linuxres.Values{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := linuxres.Of(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("Of = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if _, err := linuxres.Of(req("lots", "", "", "")); err == nil {
		t.Error("a bad quantity was converted")
	}
}

// TestRequirements: runtime values back into requests and limits
// for a status, the memory request kept from what was asked.
func TestRequirements(t *testing.T) {
	v := linuxres.Values{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimitBytes: 64 << 20}
	got := v.Requirements(req("", "32Mi", "", ""))
	want := req("500m", "32Mi", "500m", "64Mi")
	if !proto.Equal(got, want) {
		t.Errorf("Requirements = %v, want %v", got, want)
	}
	if got := (linuxres.Values{CPUShares: 2}).Requirements(nil); got.GetRequests() != nil || got.GetLimits() != nil {
		t.Errorf("nothing set came back as %v", got)
	}
	a, b := linuxres.Values{CPUQuota: 50000, CPUPeriod: 100000}, linuxres.Values{CPUQuota: 25000, CPUPeriod: 50000}
	if !a.SameCPULimit(b) || a.SameCPULimit(linuxres.Values{}) {
		t.Error("SameCPULimit compares quota per period, no limit only with no limit")
	}
}
