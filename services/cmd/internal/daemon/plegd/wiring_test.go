package plegd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
)

// The PLEG's CRI connection decodes its list answers through the list
// codec: a sandbox listed twice is decoded once and reused once, as its
// metrics on the binary's registry say.
func TestTheCRIConnectionListsThroughTheListCodec(t *testing.T) {
	ep, _ := crisimtest.Start(t, crisim.Options{Mode: crisim.ModeSimulated})
	rs, _ := crisimtest.Clients(t, ep)
	ctx := context.Background()
	if _, err := rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u"}}, ""); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	conn, err := criConn(ep, 30*time.Second, nil, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	for range 2 {
		if _, err := conn.Observer().ListPodSandbox(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP syncpod_pleg_cri_list_items_total Sandboxes and containers in the runtime's list answers, by decoding: decoded, or reused (encoded as in an earlier answer, so not decoded again).
# TYPE syncpod_pleg_cri_list_items_total counter
syncpod_pleg_cri_list_items_total{decoding="decoded"} 1
syncpod_pleg_cri_list_items_total{decoding="reused"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "syncpod_pleg_cri_list_items_total"); err != nil {
		t.Fatal(err)
	}
}
