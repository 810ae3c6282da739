package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubernetesSchedulerSpreadsADeploymentOverSyncpodNodes: with
// kube-scheduler and kube-controller-manager beside the API server, a
// Deployment's pods are scheduled over three syncpod nodes (a hard
// topology spread over kubernetes.io/hostname: two each) and run there;
// a node whose agent stops turns NotReady (the node lifecycle controller
// sees its lease expire: Ready=Unknown, NodeStatusUnknown, tainted
// node.kubernetes.io/unreachable) while the others stay Ready.
func TestKubernetesSchedulerSpreadsADeploymentOverSyncpodNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	t.Parallel()
	cp := startControlPlane(t)
	cp.startControllers()
	ctx := context.Background()
	const nNodes = 3
	nodes := make([]*k8sNode, nNodes)
	for i := range nodes {
		// Renewed every 2 s against the controller's 12 s grace: at the
		// default 10 s, one slow renewal on a loaded machine let a live
		// node's lease run out.
		nodes[i] = startK8sNode(t, cp, fmt.Sprintf("syncpod-spread-%d", i), "--node-lease-renew-interval=2s")
	}
	eventually(t, 60*time.Second, "all nodes Ready", func() (bool, string) {
		list, err := cp.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var ready []string
		for i := range list.Items {
			if nodeReady(&list.Items[i]) {
				ready = append(ready, list.Items[i].Name)
			}
		}
		return len(ready) == nNodes, fmt.Sprintf("ready: %v", ready)
	})

	deployment := `apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 6
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      hostNetwork: true
      terminationGracePeriodSeconds: 2
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {matchLabels: {app: spread}}
      containers:
      - name: main
        image: busybox:1.36
        command: ["sh", "-c", "while true; do sleep 1; done"]
`
	applied := time.Now()
	if out, err := cp.kubectlStdin(deployment, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	if out, err := cp.kubectl("rollout", "status", "deployment/spread", "--timeout=150s"); err != nil {
		t.Fatalf("kubectl rollout status: %v\n%s\n%s\n%s", err, out, cp.mustKubectl("get", "pods", "-o", "wide"), cp.controllersExited())
	}
	t.Logf("kubectl apply of a 6-replica Deployment -> rollout complete (scheduler, 3 syncpod nodes): %v", time.Since(applied).Round(time.Millisecond))
	list, err := cp.client.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "app=spread"})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning {
			per[p.Spec.NodeName]++
		}
	}
	var got []string
	for _, n := range nodes {
		got = append(got, fmt.Sprintf("%s=%d", n.name, per[n.name]))
	}
	sort.Strings(got)
	for _, n := range nodes {
		if per[n.name] != 2 {
			t.Errorf("Running pods per node: %v, want 2 on each\n%s", got, cp.mustKubectl("get", "pods", "-o", "wide"))
			break
		}
	}
	// Each node's runtime holds its pods' containers.
	for _, p := range list.Items {
		for _, n := range nodes {
			if n.name == p.Spec.NodeName && len(n.criContainers(t, string(p.UID))) != 1 {
				t.Errorf("%s: not one container in %s's runtime", p.Name, n.name)
			}
		}
	}

	// A stopped agent: its lease runs out and the node turns NotReady.
	stopped := nodes[2]
	if err := stopped.agent.stop(t); err != nil {
		t.Errorf("syncpod-node exit after SIGTERM: %v", err)
	}
	stopped.killedAgents = append(stopped.killedAgents, stopped.agent)
	stopped.agent = nil
	// It is the node lifecycle controller's doing, not the agent's: the
	// controller alone sets Ready=Unknown with reason NodeStatusUnknown
	// (an agent reports True or False), and taints the node unreachable.
	eventually(t, 90*time.Second, "the stopped node NotReady (Unknown, by the node lifecycle controller) and tainted unreachable", func() (bool, string) {
		nd, err := cp.client.CoreV1().Nodes().Get(ctx, stopped.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := "no Ready condition"
		unknown := false
		for _, c := range nd.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message)
				unknown = c.Status == corev1.ConditionUnknown && c.Reason == "NodeStatusUnknown"
			}
		}
		tainted := false
		for _, tn := range nd.Spec.Taints {
			if tn.Key == corev1.TaintNodeUnreachable && tn.Effect == corev1.TaintEffectNoSchedule {
				tainted = true
			}
		}
		return unknown && tainted, fmt.Sprintf("%s taints=%v", ready, nd.Spec.Taints)
	})
	out := cp.mustKubectl("get", "nodes")
	if line := lineWith(out, stopped.name+" "); !strings.Contains(line, "NotReady") {
		t.Errorf("kubectl get nodes: %q, want %s NotReady", line, stopped.name)
	}
	for _, n := range nodes[:2] {
		if line := lineWith(out, n.name+" "); !strings.Contains(line, " Ready") {
			t.Errorf("kubectl get nodes: %q, want %s Ready", line, n.name)
		}
	}
	t.Logf("kubectl get nodes after stopping one agent:\n%s", out)
}
