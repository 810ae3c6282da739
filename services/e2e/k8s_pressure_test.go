package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubernetesNodeUnderMemoryPressure: under a soft memory threshold
// every host meets, with a grace period no test reaches (so nothing is
// evicted), the node reports the MemoryPressure the planner's eviction
// manager finds, and its admission does as the kubelet's: a
// BestEffort pod fails with reason Evicted, a Burstable one runs.
func TestKubernetesNodeUnderMemoryPressure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	t.Parallel()
	cp := startControlPlane(t)
	ctx := context.Background()
	n := startK8sNodeWith(t, cp, "syncpod-e2e-pressure", nodeOptions{plannerArgs: []string{
		"--eviction-soft=memory.available<1Ei", "--eviction-soft-grace-period=memory.available=1h"}})
	eventually(t, 60*time.Second, "node Ready with MemoryPressure", func() (bool, string) {
		nd, err := cp.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == corev1.NodeMemoryPressure {
				return nodeReady(nd) && c.Status == corev1.ConditionTrue && c.Reason == "KubeletHasInsufficientMemory" &&
					strings.Contains(c.Message, "memory.available"), fmt.Sprintf("%+v", c)
			}
		}
		return false, "no MemoryPressure condition"
	})
	bestEffort := k8sPodYAML("best-effort", n.name, 2, "while true; do sleep 1; done")
	burstable := strings.Replace(k8sPodYAML("burstable", n.name, 2, "while true; do sleep 1; done"),
		"    command:", "    resources: {requests: {cpu: 10m}}\n    command:", 1)
	if out, err := cp.kubectlStdin(bestEffort+"---\n"+burstable, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	pods := cp.client.CoreV1().Pods(metav1.NamespaceDefault)
	eventually(t, 60*time.Second, "best-effort Failed (Evicted), burstable Running", func() (bool, string) {
		be, err := pods.Get(ctx, "best-effort", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		bu, err := pods.Get(ctx, "burstable", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return be.Status.Phase == corev1.PodFailed && be.Status.Reason == "Evicted" &&
				strings.Contains(be.Status.Message, "MemoryPressure") && bu.Status.Phase == corev1.PodRunning,
			podSummary(be) + " " + be.Status.Reason + " | " + podSummary(bu)
	})
	be, err := pods.Get(ctx, "best-effort", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(n.criContainers(t, string(be.UID))); got != 0 {
		t.Errorf("the refused pod has %d containers in the runtime", got)
	}
}
