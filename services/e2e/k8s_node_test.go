package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// k8sNode is a whole syncpod node (crisim, executor, PLEG, planner)
// joined to a control plane by its own syncpod-node agent.
type k8sNode struct {
	*node
	name  string
	cp    *controlPlane
	agent *proc
	// agentArgs are added to the agent's flags.
	agentArgs []string
	// killedAgents are agents ended with SIGKILL (logs kept for failures).
	killedAgents []*proc
}

func startK8sNode(t *testing.T, cp *controlPlane, name string, agentArgs ...string) *k8sNode {
	t.Helper()
	return startK8sNodeWith(t, cp, name, nodeOptions{}, agentArgs...)
}

// startK8sNodeWith is startK8sNode with the node's processes started
// with o.
func startK8sNodeWith(t *testing.T, cp *controlPlane, name string, o nodeOptions, agentArgs ...string) *k8sNode {
	t.Helper()
	n := &k8sNode{node: startNode(t, o), name: name, cp: cp, agentArgs: agentArgs}
	// Registered after startNode's: runs before the node's processes stop.
	t.Cleanup(func() {
		if n.agent != nil {
			if err := n.agent.stop(t); err != nil {
				t.Errorf("syncpod-node %s: exit after SIGTERM: %v", name, err)
			}
		}
		if t.Failed() {
			for _, a := range append(n.killedAgents, n.agent) {
				if a != nil {
					t.Logf("---- log of syncpod-node %s ----\n%s", name, a.tail(120))
				}
			}
		}
	})
	n.startAgent()
	return n
}

// lowDiskThresholds are the test nodes' disk thresholds.
const lowDiskThresholds = "nodefs.available<1%,nodefs.inodesFree<1%,imagefs.available<1%,imagefs.inodesFree<1%"

func (n *k8sNode) startAgent() {
	n.t.Helper()
	n.agent = startProc(n.t, "syncpod-node", procOptions{managed: true, args: append([]string{
		"--kubeconfig=" + n.cp.kubeconfig,
		"--node-name=" + n.name,
		"--planner=" + target(n.planner.grpc),
		"--cri-endpoint=unix://" + n.sock,
		"--node-ip=127.0.0.1",
		"--node-labels=syncpod.io/e2e=true",
		"--root-dir=" + n.workDir,
		"--kubelet-listen=127.0.0.1:0",
		"--tls-cert-file=" + filepath.Join(n.cp.dir, "kubelet.crt"),
		"--tls-private-key-file=" + filepath.Join(n.cp.dir, "kubelet.key"),
		"--client-ca-file=" + filepath.Join(n.cp.dir, "ca.crt"),
		"--kubelet-authorized-users=kube-apiserver-kubelet-client",
	}, n.agentArgs...)})
}

// killAgent ends the agent with SIGKILL and starts a new one.
func (n *k8sNode) killAgent() {
	n.t.Helper()
	_ = n.agent.signal(n.t, syscall.SIGKILL)
	n.killedAgents = append(n.killedAgents, n.agent)
	n.startAgent()
}

func nodeReady(nd *corev1.Node) bool {
	for _, c := range nd.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// k8sPodYAML is a pod bound to node (no scheduler runs), its container
// running command.
func k8sPodYAML(name, node string, grace int, command string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: %s}
spec:
  nodeName: %s
  hostNetwork: true
  terminationGracePeriodSeconds: %d
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", %q]
`, name, name, node, grace, command)
}

func podSummary(p *corev1.Pod) string {
	var cs []string
	for _, c := range p.Status.ContainerStatuses {
		state := "?"
		switch {
		case c.State.Running != nil:
			state = "running"
		case c.State.Waiting != nil:
			state = "waiting:" + c.State.Waiting.Reason
		case c.State.Terminated != nil:
			state = "terminated:" + c.State.Terminated.Reason
		}
		cs = append(cs, fmt.Sprintf("%s %s restarts=%d id=%s", c.Name, state, c.RestartCount, c.ContainerID))
	}
	return fmt.Sprintf("%s phase=%s ip=%s host=%s [%s]", p.Name, p.Status.Phase, p.Status.PodIP, p.Status.HostIP, strings.Join(cs, "; "))
}

// criContainers lists the runtime's containers of the pod with uid.
func (n *k8sNode) criContainers(t *testing.T, uid string) []*runtimeapi.Container {
	t.Helper()
	cs, err := n.cri.ListContainers(rpcCtx(t), &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestKubernetesNodesJoinAndRunPods: three syncpod nodes, each its own
// crisim, planner, executor, PLEG and syncpod-node agent, join one real
// kube-apiserver (on etcd). They turn Ready; pods bound to each node run
// and show Running through kubectl; a crash-looping pod shows its restart
// counts; events reach the API server; deleting a pod
// stops its containers before the object goes (grace period, R-9.4); an
// agent killed with SIGKILL and restarted adopts its running pods without
// restarting them.
func TestKubernetesNodesJoinAndRunPods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	t.Parallel() // its own control plane and nodes
	cp := startControlPlane(t)
	ctx := context.Background()
	const nNodes = 3
	nodes := make([]*k8sNode, nNodes)
	for i := range nodes {
		nodes[i] = startK8sNode(t, cp, fmt.Sprintf("syncpod-e2e-%d", i))
	}

	// 1. Registration, readiness, leases.
	eventually(t, 60*time.Second, "all nodes Ready", func() (bool, string) {
		list, err := cp.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "syncpod.io/e2e=true"})
		if err != nil {
			return false, err.Error()
		}
		var ready []string
		for i := range list.Items {
			if nodeReady(&list.Items[i]) {
				ready = append(ready, list.Items[i].Name)
			}
		}
		return len(ready) == nNodes, fmt.Sprintf("ready: %v of %d", ready, len(list.Items))
	})
	out := cp.mustKubectl("get", "nodes", "-o", "wide")
	t.Logf("kubectl get nodes -o wide:\n%s", out)
	for _, n := range nodes {
		nd, err := cp.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, n.name) {
			t.Errorf("kubectl get nodes does not list %s", n.name)
		}
		if nd.Labels[corev1.LabelHostname] != n.name || nd.Labels[corev1.LabelOSStable] != "linux" {
			t.Errorf("%s labels: %v", n.name, nd.Labels)
		}
		if cpu := nd.Status.Capacity.Cpu(); cpu.IsZero() || nd.Status.Allocatable.Memory().IsZero() {
			t.Errorf("%s capacity/allocatable: %v / %v", n.name, nd.Status.Capacity, nd.Status.Allocatable)
		}
		if rv := nd.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rv, "syncpod-crisim://") {
			t.Errorf("%s containerRuntimeVersion = %q, want the CRI runtime's name://version", n.name, rv)
		}
		if len(nd.Status.Addresses) == 0 || nd.Status.Addresses[0].Address != "127.0.0.1" {
			t.Errorf("%s addresses: %v", n.name, nd.Status.Addresses)
		}
		lease, err := cp.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease of %s: %v", n.name, err)
		}
		if lease.Spec.RenewTime == nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != n.name {
			t.Errorf("lease of %s: %+v", n.name, lease.Spec)
		}
	}

	// 2. Pods bound to each node, applied with kubectl, run.
	dir := t.TempDir()
	var docs []string
	for i, n := range nodes {
		docs = append(docs, k8sPodYAML(fmt.Sprintf("web-%d", i), n.name, 5, "while true; do sleep 1; done"))
	}
	docs = append(docs, k8sPodYAML("crash", nodes[0].name, 1, "echo starting; exit 3"))
	manifest := filepath.Join(dir, "pods.yaml")
	if err := os.WriteFile(manifest, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	cp.mustKubectl("apply", "-f", manifest)
	pods := cp.client.CoreV1().Pods(metav1.NamespaceDefault)
	running := map[string]time.Duration{}
	eventually(t, 60*time.Second, "web pods Running", func() (bool, string) {
		var saw []string
		for i := range nodes {
			name := fmt.Sprintf("web-%d", i)
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			saw = append(saw, podSummary(p))
			if _, ok := running[name]; !ok && p.Status.Phase == corev1.PodRunning {
				running[name] = time.Since(applied)
			}
		}
		return len(running) == nNodes, strings.Join(saw, " | ")
	})
	var times []string
	for name, d := range running {
		times = append(times, fmt.Sprintf("%s %v", name, d.Round(time.Millisecond)))
	}
	sort.Strings(times)
	t.Logf("kubectl apply -> Running seen by polling the API (upper bound): %s", strings.Join(times, ", "))

	for i, n := range nodes {
		p, err := pods.Get(ctx, fmt.Sprintf("web-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := p.Status
		if st.HostIP != "127.0.0.1" || st.PodIP != "127.0.0.1" || st.StartTime == nil || st.QOSClass != corev1.PodQOSBestEffort {
			t.Errorf("%s status: hostIP=%q podIP=%q startTime=%v qos=%q", p.Name, st.HostIP, st.PodIP, st.StartTime, st.QOSClass)
		}
		if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running == nil || st.ContainerStatuses[0].ContainerID == "" {
			t.Errorf("%s container statuses: %s", p.Name, podSummary(p))
		}
		if got := len(n.criContainers(t, string(p.UID))); got != 1 {
			t.Errorf("%s: %d containers in %s's runtime, want 1", p.Name, got, n.name)
		}
		rec, err := n.get(p.Name)
		if err != nil {
			t.Fatalf("%s in %s's planner: %v", p.Name, n.name, err)
		}
		if rec.GetPod().GetAnnotations()["kubernetes.io/config.source"] != "api" {
			t.Errorf("%s in the planner is not marked source api: %v", p.Name, rec.GetPod().GetAnnotations())
		}
	}

	// 3. The crash-looping pod: restart counts and last state in the API.
	eventually(t, 60*time.Second, "crash pod restarts counted", func() (bool, string) {
		p, err := pods.Get(ctx, "crash", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(p.Status.ContainerStatuses) != 1 {
			return false, podSummary(p)
		}
		c := p.Status.ContainerStatuses[0]
		lt := c.LastTerminationState.Terminated
		return c.RestartCount >= 2 && lt != nil && lt.ExitCode == 3, podSummary(p)
	})
	t.Logf("kubectl get pods -o wide:\n%s", cp.mustKubectl("get", "pods", "-o", "wide"))
	out = cp.mustKubectl("get", "pods", "-o", "wide")
	for i, n := range nodes {
		line := lineWith(out, fmt.Sprintf("web-%d ", i))
		if !strings.Contains(line, "Running") || !strings.Contains(line, n.name) {
			t.Errorf("kubectl get pods: web-%d line %q, want Running on %s", i, line, n.name)
		}
	}

	// 4. Events from the nodes' planners are on the API server.
	eventually(t, 30*time.Second, "node events recorded", func() (bool, string) {
		evs, err := cp.client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			seen[e.InvolvedObject.Name+"/"+e.Reason] = true
		}
		want := []string{"web-1/Created", "web-1/Started", "crash/BackOff", "crash/Started"}
		var missing []string
		for _, w := range want {
			if !seen[w] {
				missing = append(missing, w)
			}
		}
		keys := make([]string, 0, len(seen))
		for k := range seen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return len(missing) == 0, fmt.Sprintf("missing %v; have %v", missing, keys)
	})

	// 4b. A static pod (a manifest in the planner's directory) gets a
	// mirror pod on the API server with its status; it goes with the file.
	n2 := nodes[2]
	static := strings.Replace(k8sPodYAML("static-web", "", 2, "while true; do sleep 1; done"), "  nodeName: \n", "", 1)
	tmp := filepath.Join(n2.manifestDir, ".static-web.yaml")
	if err := os.WriteFile(tmp, []byte(static), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(n2.manifestDir, "static-web.yaml")); err != nil {
		t.Fatal(err)
	}
	mirrorName := "static-web-" + n2.name
	eventually(t, 60*time.Second, "mirror pod Running", func() (bool, string) {
		p, err := pods.Get(ctx, mirrorName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Annotations[corev1.MirrorPodAnnotationKey] != "" && p.Spec.NodeName == n2.name && p.Status.Phase == corev1.PodRunning, podSummary(p)
	})
	// A deleted mirror pod is made again: the static pod still runs.
	cp.mustKubectl("delete", "pod", mirrorName, "--timeout=60s")
	eventually(t, 60*time.Second, "mirror pod made again", func() (bool, string) {
		p, err := pods.Get(ctx, mirrorName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, podSummary(p)
	})
	if err := os.Remove(filepath.Join(n2.manifestDir, "static-web.yaml")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "mirror pod gone with its manifest", func() (bool, string) {
		p, err := pods.Get(ctx, mirrorName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, podSummary(p)
	})

	// 5. Agent SIGKILLed and restarted: pods adopted, not restarted.
	n1 := nodes[1]
	before, err := pods.Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	beforeIDs := containerIDs(n1.criContainers(t, string(before.UID)))
	recBefore, err := n1.get("web-1")
	if err != nil {
		t.Fatal(err)
	}
	n1.killAgent()
	// A pod applied after the restart runs: the new agent is at work.
	late := k8sPodYAML("late-1", n1.name, 5, "while true; do sleep 1; done")
	if out, err := cp.kubectlStdin(late, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply late-1: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, "late-1 Running after the agent restart", func() (bool, string) {
		p, err := pods.Get(ctx, "late-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, podSummary(p)
	})
	after, err := pods.Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := containerIDs(n1.criContainers(t, string(after.UID))); got != beforeIDs {
		t.Errorf("web-1 containers after the agent restart: %s, before: %s (restarted)", got, beforeIDs)
	}
	if c := after.Status.ContainerStatuses; len(c) != 1 || c[0].RestartCount != 0 || c[0].ContainerID != before.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("web-1 after the agent restart: %s; before: %s", podSummary(after), podSummary(before))
	}
	recAfter, err := n1.get("web-1")
	if err != nil {
		t.Fatal(err)
	}
	if recAfter.GetPod().GetGeneration() != recBefore.GetPod().GetGeneration() {
		t.Errorf("web-1 re-applied with a change by the new agent: generation %d -> %d", recBefore.GetPod().GetGeneration(), recAfter.GetPod().GetGeneration())
	}

	// 6. kubectl delete: containers stopped, then the object removed.
	for i, n := range nodes {
		name := fmt.Sprintf("web-%d", i)
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out := cp.mustKubectl("delete", "pod", name, "--timeout=60s")
		took := time.Since(start)
		if _, err := pods.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s still exists after kubectl delete (%s): %v", name, strings.TrimSpace(out), err)
		}
		if left := n.criContainers(t, string(p.UID)); len(left) != 0 {
			var states []string
			for _, c := range left {
				states = append(states, c.GetState().String())
			}
			t.Errorf("%s: the API object is gone but %d containers are left on %s: %v", name, len(left), n.name, states)
		}
		if _, err := n.get(name); err == nil {
			t.Errorf("%s still in %s's planner after the object was deleted", name, n.name)
		}
		t.Logf("kubectl delete pod %s (grace 5 s) returned after %v", name, took.Round(time.Millisecond))
	}
	for _, name := range []string{"crash", "late-1"} {
		cp.mustKubectl("delete", "pod", name, "--timeout=60s")
	}
}

// kubectlStdin runs kubectl with stdin.
func (cp *controlPlane) kubectlStdin(stdin string, args ...string) (string, error) {
	cmd := kubectlCmd(cp, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func containerIDs(cs []*runtimeapi.Container) string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.GetId()+":"+c.GetState().String())
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

func lineWith(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
