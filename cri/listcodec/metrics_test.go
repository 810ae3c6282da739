package listcodec

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The decoding metrics read the codec they were made for.
func TestDecodeMetricsCountTheCodecsDecoding(t *testing.T) {
	c := newCodec(time.Now)
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewDecodeMetrics(reg, c); err != nil {
		t.Fatal(err)
	}
	answer := marshal(t, &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{
		container(1, runtimeapi.ContainerState_CONTAINER_RUNNING), container(2, runtimeapi.ContainerState_CONTAINER_RUNNING)}})
	for range 2 {
		if err := c.Unmarshal(frames(answer), &runtimeapi.ListContainersResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP syncpod_pleg_cri_list_items_cached Decoded sandboxes and containers kept for the next list answers.
# TYPE syncpod_pleg_cri_list_items_cached gauge
syncpod_pleg_cri_list_items_cached 2
# HELP syncpod_pleg_cri_list_items_total Sandboxes and containers in the runtime's list answers, by decoding: decoded, or reused (encoded as in an earlier answer, so not decoded again).
# TYPE syncpod_pleg_cri_list_items_total counter
syncpod_pleg_cri_list_items_total{decoding="decoded"} 2
syncpod_pleg_cri_list_items_total{decoding="reused"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
