package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// restartPlannerSameAddress ends the node's planner with SIGKILL, runs
// meanwhile while none runs, and starts a new one on the same address
// (the agent's --planner), database and peers.
func (n *k8sNode) restartPlannerSameAddress(meanwhile func()) {
	n.t.Helper()
	old := killPlanner(n.t, n.planner, 150)
	n.killed = append(n.killed, old)
	meanwhile()
	args := n.plannerArgs
	n.plannerArgs = append(append([]string(nil), args...), "--listen="+target(old.grpc))
	n.startPlanner()
	n.plannerArgs = args
}

// TestKubernetesRestartsLoseNothing: the planner (SIGKILL) and then the
// kube-apiserver (SIGKILL) are restarted while pods run on a syncpod
// node. No container is started twice (the runtime's container ids and
// the restart counts stay; a finished restartPolicy Never pod is not run
// again), a pod applied while the planner was down runs once it is back,
// and a pod that finished while the API server was down shows Succeeded
// once it is back (the status writer keeps the newest status).
func TestKubernetesRestartsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	t.Parallel()
	cp := startControlPlane(t)
	ctx := context.Background()
	n := startK8sNode(t, cp, "syncpod-e2e-restarts")
	gate := filepath.Join(t.TempDir(), "finish")
	never := func(y string) string { return strings.Replace(y, "spec:\n", "spec:\n  restartPolicy: Never\n", 1) }
	docs := []string{
		k8sPodYAML("steady", n.name, 2, "while true; do sleep 1; done"),
		never(k8sPodYAML("oneshot", n.name, 2, "echo done")),
		never(k8sPodYAML("gated", n.name, 2, fmt.Sprintf("while [ ! -e %s ]; do sleep 0.1; done; echo finished", gate))),
	}
	if out, err := cp.kubectlStdin(strings.Join(docs, "---\n"), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	pods := cp.client.CoreV1().Pods(metav1.NamespaceDefault)
	phases := func(want map[string]corev1.PodPhase) func() (bool, string) {
		return func() (bool, string) {
			var saw []string
			ok := true
			for name, ph := range want {
				p, err := pods.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				saw = append(saw, podSummary(p))
				ok = ok && p.Status.Phase == ph
			}
			return ok, strings.Join(saw, " | ")
		}
	}
	eventually(t, 60*time.Second, "pods started", phases(map[string]corev1.PodPhase{
		"steady": corev1.PodRunning, "oneshot": corev1.PodSucceeded, "gated": corev1.PodRunning,
	}))
	// What ran: the runtime's containers and the API's view of them.
	snapshot := func() map[string]string {
		out := map[string]string{}
		for _, name := range []string{"steady", "oneshot", "gated"} {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range n.criContainers(t, string(p.UID)) {
				ids = append(ids, c.GetId())
			}
			out[name] = strings.Join(ids, ",")
		}
		return out
	}
	before := snapshot()
	for name, ids := range before {
		if ids == "" || strings.Contains(ids, ",") {
			t.Fatalf("%s: containers %q before the restarts, want exactly one", name, ids)
		}
	}
	restarts := func() {
		t.Helper()
		for _, name := range []string{"steady", "oneshot", "gated"} {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range p.Status.ContainerStatuses {
				if c.RestartCount != 0 {
					t.Errorf("%s: restart count %d after a restart of the control side: %s", name, c.RestartCount, podSummary(p))
				}
			}
		}
	}

	// 1. The planner is killed; a pod applied meanwhile runs once it is
	// back, and nothing that ran is started again.
	n.restartPlannerSameAddress(func() {
		if out, err := cp.kubectlStdin(k8sPodYAML("while-planner-down", n.name, 2, "while true; do sleep 1; done"), "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply while-planner-down: %v\n%s", err, out)
		}
	})
	eventually(t, 90*time.Second, "the pod applied while the planner was down Running", phases(map[string]corev1.PodPhase{
		"while-planner-down": corev1.PodRunning, "steady": corev1.PodRunning, "oneshot": corev1.PodSucceeded, "gated": corev1.PodRunning,
	}))
	if got := snapshot(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("containers after the planner restart: %v, before: %v", got, before)
	}
	restarts()

	// 2. The API server is killed; a pod finishes meanwhile: its status
	// reaches the API server once it is back; nothing runs twice.
	down := time.Now()
	cp.restartAPIServer(func() {
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		// The node sees the container end while the API server is down.
		n.waitRecord("gated", 30*time.Second, "gated Succeeded in the planner", func(r *plannerv1.PodRecord) bool {
			return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED
		})
	})
	eventually(t, 90*time.Second, "status caught up after the API server restart", phases(map[string]corev1.PodPhase{
		"while-planner-down": corev1.PodRunning, "steady": corev1.PodRunning, "oneshot": corev1.PodSucceeded, "gated": corev1.PodSucceeded,
	}))
	if got := snapshot(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("containers after the API server restart: %v, before: %v", got, before)
	}
	restarts()
	eventually(t, 60*time.Second, "node Ready with a lease renewed after the API server restart", func() (bool, string) {
		nd, err := cp.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		lease, err := cp.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(nd) && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(down), fmt.Sprintf("ready=%v renew=%v", nodeReady(nd), lease.Spec.RenewTime)
	})
	if out, err := cp.kubectl("logs", "gated"); err != nil || out != "finished\n" {
		t.Errorf("kubectl logs gated: %v %q", err, out)
	}
}

// through the API server: pods deleted with kubectl, whose
// containers take their grace period to stop (each notes every SIGTERM and
// goes on), while the node agent and the planner are killed with SIGKILL
// and started again. Every pod must finish terminating (gone from the API
// server and from crisim), with no deadlock, and each container must have
// been sent its stop signal once. (cri-o deadlocked on the StopContainer
// a restarted kubelet sent again for a container already stopping.)
func TestKubernetesPodsTerminatingWhileTheAgentAndPlannerRestartFinishWithOneStopSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	t.Parallel()
	cp := startControlPlane(t)
	ctx := context.Background()
	n := startK8sNode(t, cp, "syncpod-e2e-terminating")
	dir := t.TempDir()
	names := []string{"terminating-0", "terminating-1", "terminating-2"}
	var docs []string
	for _, name := range names {
		f := filepath.Join(dir, name)
		docs = append(docs, k8sPodYAML(name, n.name, 20,
			fmt.Sprintf(`trap "echo TERM >> %s" TERM; echo up > %s.up; while true; do sleep 0.1; done`, f, f)))
	}
	if out, err := cp.kubectlStdin(strings.Join(docs, "---\n"), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	pods := cp.client.CoreV1().Pods(metav1.NamespaceDefault)
	eventually(t, 90*time.Second, "every container up, its trap set", func() (bool, string) {
		for _, name := range names {
			if _, err := os.Stat(filepath.Join(dir, name+".up")); err != nil {
				return false, err.Error()
			}
		}
		return true, ""
	})
	uids := map[string]string{}
	for _, name := range names {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = string(p.UID)
	}
	terms := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.Count(string(b), "TERM")
	}
	if out, err := cp.kubectl(append([]string{"delete", "pod", "--wait=false"}, names...)...); err != nil {
		t.Fatalf("kubectl delete: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, "every container got its SIGTERM", func() (bool, string) {
		var got []string
		ok := true
		for _, name := range names {
			got = append(got, fmt.Sprintf("%s=%d", name, terms(name)))
			ok = ok && terms(name) > 0
		}
		return ok, strings.Join(got, " ")
	})

	// Inside every container's grace period: the agent and the planner go.
	n.killAgent()
	n.restartPlannerSameAddress(func() {})

	eventually(t, 120*time.Second, "every pod gone from the API server and crisim", func() (bool, string) {
		for _, name := range names {
			if p, err := pods.Get(ctx, name, metav1.GetOptions{}); err == nil {
				return false, podSummary(p)
			}
			if cs := n.criContainers(t, uids[name]); len(cs) > 0 {
				return false, fmt.Sprintf("%s: %d containers left in crisim", name, len(cs))
			}
		}
		return true, ""
	})
	for _, name := range names {
		if got := terms(name); got != 1 {
			t.Errorf("%s: its container was sent SIGTERM %d times, want once", name, got)
		}
	}
}
