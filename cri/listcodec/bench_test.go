package listcodec

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BenchmarkDecodeContainers2000 decodes a steady relist's ListContainers
// answer of 2,000 containers (nothing changed since the last one; each
// answer encoded anew, so its maps come in a new order) through the
// cache, and, alternating in the same loop, with protobuf alone: the
// baseline. Reported: cached-ms and proto-ms per answer, and their ratio.
func BenchmarkDecodeContainers2000(b *testing.B) {
	resp := &runtimeapi.ListContainersResponse{}
	for i := range 2000 {
		c := container(i, runtimeapi.ContainerState_CONTAINER_RUNNING)
		c.Labels["io.kubernetes.pod.name"] = "pod"
		c.Labels["io.kubernetes.pod.namespace"] = "default"
		c.Annotations["io.kubernetes.pod.terminationGracePeriod"] = "30"
		resp.Containers = append(resp.Containers, c)
	}
	var answers [][]byte
	for range 4 {
		a, err := proto.Marshal(resp)
		if err != nil {
			b.Fatal(err)
		}
		answers = append(answers, a)
	}
	c := newCodec(time.Now)
	var cached, plain time.Duration
	n := 0
	for b.Loop() {
		a := answers[n%len(answers)]
		t0 := time.Now()
		if err := c.Unmarshal(frames(a), &runtimeapi.ListContainersResponse{}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := proto.Unmarshal(a, &runtimeapi.ListContainersResponse{}); err != nil {
			b.Fatal(err)
		}
		cached += t1.Sub(t0)
		plain += time.Since(t1)
		n++
	}
	b.ReportMetric(cached.Seconds()*1000/float64(n), "cached-ms")
	b.ReportMetric(plain.Seconds()*1000/float64(n), "proto-ms")
	b.ReportMetric(cached.Seconds()/plain.Seconds(), "cached/proto")
}
