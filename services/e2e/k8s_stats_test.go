package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/syncpod/syncpod/internal/proctest"
)

// TestKubernetesResourceMetricsThroughTheAPIServer: what metrics-server
// and `kubectl get --raw` read of a node through the API server's node
// proxy, the kubelet's /metrics/resource and /stats/summary, a syncpod
// node serves from its read API: the node's CPU and memory, and a running
// pod's container with its start time. The API server proxies only to a
// node address that is not loopback: the test runs again in a network
// namespace of its own, the node's address on its loopback device.
func TestKubernetesResourceMetricsThroughTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	if os.Getenv(envInNetns) == "" {
		t.Parallel()
		runInOwnNetns(t)
		return
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v\n%s", err, out)
	}
	if out, err := exec.Command("ip", "addr", "add", netnsNodeIP+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add %s: %v\n%s", netnsNodeIP, err, out)
	}
	cp := startControlPlane(t)
	ctx := context.Background()
	n := startK8sNode(t, cp, "syncpod-e2e-stats", "--node-ip="+netnsNodeIP, "--kubelet-listen="+netnsNodeIP+":0")
	eventually(t, 60*time.Second, "node Ready with its kubelet endpoint", func() (bool, string) {
		nd, err := cp.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(nd) && nd.Status.DaemonEndpoints.KubeletEndpoint.Port > 0, fmt.Sprintf("%+v", nd.Status.DaemonEndpoints)
	})
	if out, err := cp.kubectlStdin(k8sPodYAML("measured", n.name, 2, "while true; do sleep 1; done"), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, "measured Running", func() (bool, string) {
		p, err := cp.client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "measured", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, podSummary(p)
	})
	raw := func(path string) (string, error) {
		out, err := kubectlCmd(cp, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy"+path).Output()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			err = fmt.Errorf("kubectl get --raw %s: %w: %s", path, err, ee.Stderr)
		}
		return string(out), err
	}

	// /metrics/resource: the kubelet's series, parsed as Prometheus does.
	mainLabels := map[string]string{"container": "main", "pod": "measured", "namespace": "default"}
	var fams map[string]*dto.MetricFamily
	eventually(t, 60*time.Second, "the container's series in /metrics/resource", func() (bool, string) {
		out, err := raw("/metrics/resource")
		if err != nil {
			return false, err.Error()
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		if fams, err = p.TextToMetricFamilies(strings.NewReader(out)); err != nil {
			return false, fmt.Sprintf("%v\n%s", err, out)
		}
		_, ok := findSeries(fams["container_start_time_seconds"], mainLabels)
		return ok, out
	})
	if m, _ := findSeries(fams["container_start_time_seconds"], mainLabels); m.GetGauge().GetValue() < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Errorf("container_start_time_seconds of measured/main = %v, want its start", m.GetGauge().GetValue())
	}
	for _, name := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes"} {
		if m, ok := findSeries(fams[name], mainLabels); !ok || m.TimestampMs == nil {
			t.Errorf("%s of measured/main: %v, want a timestamped series", name, m)
		}
	}
	if m, ok := findSeries(fams["pod_memory_working_set_bytes"], map[string]string{"pod": "measured", "namespace": "default"}); !ok || m.GetGauge().GetValue() <= 0 {
		t.Errorf("pod_memory_working_set_bytes of measured: %v, want its shell's memory", m)
	}
	for _, name := range []string{"node_cpu_usage_seconds_total", "node_memory_working_set_bytes"} {
		m, ok := findSeries(fams[name], nil)
		if v := m.GetCounter().GetValue() + m.GetGauge().GetValue(); !ok || v <= 0 || m.TimestampMs == nil {
			t.Errorf("%s: %v, want the node's use, timestamped", name, m)
		}
	}
	if m, _ := findSeries(fams["resource_scrape_error"], nil); m == nil || m.GetGauge().GetValue() != 0 {
		t.Errorf("resource_scrape_error: %v, want 0", m)
	}

	// /stats/summary: the Summary API's JSON.
	out, err := raw("/stats/summary")
	if err != nil {
		t.Fatalf("/stats/summary: %v", err)
	}
	var s statsapi.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("/stats/summary: %v\n%s", err, out)
	}
	if s.Node.NodeName != n.name || s.Node.CPU.UsageCoreNanoSeconds == nil || s.Node.Memory.WorkingSetBytes == nil || s.Node.Fs == nil {
		t.Errorf("/stats/summary node: %+v", s.Node)
	}
	var pod *statsapi.PodStats
	for i := range s.Pods {
		if s.Pods[i].PodRef.Name == "measured" && s.Pods[i].PodRef.Namespace == "default" {
			pod = &s.Pods[i]
		}
	}
	if pod == nil || pod.PodRef.UID == "" || pod.StartTime.IsZero() || len(pod.Containers) != 1 || pod.Containers[0].Name != "main" ||
		pod.Containers[0].StartTime.IsZero() || pod.Containers[0].Memory.WorkingSetBytes == nil {
		t.Errorf("/stats/summary has no measured pod with its running container main, started:\n%s", out)
	}

	cp.mustKubectl("delete", "pod", "measured", "--timeout=60s")
}

// findSeries is fam's series with exactly labels.
func findSeries(fam *dto.MetricFamily, labels map[string]string) (*dto.Metric, bool) {
	for _, m := range fam.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			match = match && labels[l.GetName()] == l.GetValue()
		}
		if match {
			return m, true
		}
	}
	return nil, false
}

// envInNetns marks a test process run again by runInOwnNetns.
const envInNetns = "SYNCPOD_E2E_IN_NETNS"

// netnsNodeIP is the node's address in a test's own network namespace:
// global unicast, which the API server's node proxy requires.
const netnsNodeIP = "10.254.0.1"

// runInOwnNetns runs t again, alone, in this test binary started in a new
// network namespace (ended with it), with the binaries built here, and
// reports its outcome as t's.
func runInOwnNetns(t *testing.T) {
	t.Helper()
	// What needs the host's network is had here: the binaries built (all
	// at once), etcd installed, Kubernetes' binaries cached.
	binary(t, "syncpod-node")
	etcdBinary(t)
	k8sBinaries(t)
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v", "-test.timeout=9m")
	cmd.Env = append(os.Environ(), envInNetns+"=1", envBinDir+"="+binDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	var out proctest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		skipOrFail(t, "cannot start the test in a network namespace of its own (root needed): %v", err)
	}
	err := cmd.Wait()
	switch {
	case err != nil:
		t.Fatalf("in its own network namespace: %v\n%s", err, tail(out.String(), 300))
	case strings.Contains(out.String(), "--- SKIP"):
		t.Skipf("skipped in its own network namespace:\n%s", tail(out.String(), 20))
	case !strings.Contains(out.String(), "--- PASS: "+t.Name()):
		t.Fatalf("in its own network namespace, the test did not run:\n%s", tail(out.String(), 40))
	}
}
