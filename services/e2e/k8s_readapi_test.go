package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/syncpod/syncpod/internal/proctest"
)

// TestKubernetesLogsAndExecThroughTheAPIServer: kubectl logs, logs -f,
// exec, attach and port-forward of a pod on a syncpod node go through the API server to the node
// agent's read API (the kubelet's /containerLogs, /exec, /attach, /portForward), which the API
// server reaches with its client certificate; other callers are refused.
func TestKubernetesLogsAndExecThroughTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	t.Parallel()
	cp := startControlPlane(t)
	ctx := context.Background()
	n := startK8sNode(t, cp, "syncpod-e2e-logs")
	var nd *corev1.Node
	eventually(t, 60*time.Second, "node Ready with its kubelet endpoint", func() (bool, string) {
		var err error
		nd, err = cp.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(nd) && nd.Status.DaemonEndpoints.KubeletEndpoint.Port > 0, fmt.Sprintf("%+v", nd.Status.DaemonEndpoints)
	})

	// The container says "first", then "second" once the test makes a
	// file (crisim containers are host processes), then stays.
	gate := filepath.Join(t.TempDir(), "go-on")
	cmd := fmt.Sprintf("echo first; echo to-stderr >&2; while [ ! -e %s ]; do sleep 0.1; done; echo second; while true; do sleep 1; done", gate)
	if out, err := cp.kubectlStdin(k8sPodYAML("talker", n.name, 2, cmd), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, "talker Running", func() (bool, string) {
		p, err := cp.client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "talker", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, podSummary(p)
	})

	// kubectl logs: both streams (written by two pipes: in either order).
	eventually(t, 30*time.Second, "kubectl logs shows the output", func() (bool, string) {
		out, err := cp.kubectl("logs", "talker")
		return err == nil && (out == "first\nto-stderr\n" || out == "to-stderr\nfirst\n"), fmt.Sprintf("%q %v", out, err)
	})
	if out := cp.mustKubectl("logs", "talker", "--timestamps"); !strings.Contains(out, "Z first\n") {
		t.Errorf("kubectl logs --timestamps: %q, want RFC 3339 times before the lines", out)
	}
	if out := cp.mustKubectl("logs", "talker", "--limit-bytes=3"); out != "fir" && out != "to-" {
		t.Errorf("kubectl logs --limit-bytes=3: %q, want the first 3 bytes", out)
	}
	if out, err := cp.kubectl("logs", "talker", "-c", "nosuch"); err == nil || !strings.Contains(out, "nosuch") {
		t.Errorf("kubectl logs of a container the pod lacks: %v %q, want an error naming it", err, out)
	}

	// kubectl logs -f: sees the old lines, then follows a new one.
	follow := kubectlCmd(cp, "logs", "-f", "talker")
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follow.Process.Kill(); _ = follow.Wait() })
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	expectLine := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("kubectl logs -f ended before %q", want)
				}
				if l == want {
					return
				}
			case <-timeout:
				t.Fatalf("kubectl logs -f: no line %q within 30 s", want)
			}
		}
	}
	expectLine("first")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	expectLine("second")
	_ = follow.Process.Kill()
	if out := cp.mustKubectl("logs", "talker", "--tail=1"); out != "second\n" {
		t.Errorf("kubectl logs --tail=1: %q", out)
	}

	// kubectl exec: output and the exit code.
	out, err := kubectlCmd(cp, "exec", "talker", "--", "sh", "-c", "echo hi; exit 3").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "hi\n") {
		t.Errorf("kubectl exec sh -c 'echo hi; exit 3': %v, output %q; want hi and exit code 3", err, out)
	}
	if out := cp.mustKubectl("exec", "talker", "--", "sh", "-c", "echo ok"); out != "ok\n" {
		t.Errorf("kubectl exec echo ok: %q", out)
	}
	// Standard input reaches the command.
	if out, err := cp.kubectlStdin("from-stdin\n", "exec", "-i", "talker", "--", "cat"); err != nil || out != "from-stdin\n" {
		t.Errorf("kubectl exec -i cat: %v %q", err, out)
	}

	// The read API itself: open /healthz, 401 without a client
	// certificate, 403 for a user it does not authorize.
	caPEM, err := os.ReadFile(filepath.Join(cp.dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	base := fmt.Sprintf("https://127.0.0.1:%d", nd.Status.DaemonEndpoints.KubeletEndpoint.Port)
	get := func(path string, certs ...tls.Certificate) (int, string) {
		t.Helper()
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
		resp, err := hc.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, _ := get("/containerLogs/default/talker/main"); code != http.StatusUnauthorized {
		t.Errorf("/containerLogs without a client certificate: %d, want 401", code)
	}
	stranger, err := tls.LoadX509KeyPair(filepath.Join(cp.dir, "stranger.crt"), filepath.Join(cp.dir, "stranger.key"))
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/containerLogs/default/talker/main", stranger); code != http.StatusForbidden {
		t.Errorf("/containerLogs as an unauthorized user: %d, want 403", code)
	}
	apiClient, err := tls.LoadX509KeyPair(filepath.Join(cp.dir, "apiserver-kubelet-client.crt"), filepath.Join(cp.dir, "apiserver-kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get("/pods", apiClient); code != http.StatusOK || !strings.Contains(body, `"name":"talker"`) {
		t.Errorf("/pods: %d %.300s", code, body)
	}
	if code, body := get("/containerLogs/default/talker/main?tailLines=1", apiClient); code != http.StatusOK || body != "second\n" {
		t.Errorf("/containerLogs?tailLines=1: %d %q", code, body)
	}
	if code, body := get("/containerLogs/default/nosuch/main", apiClient); code != http.StatusNotFound {
		t.Errorf("/containerLogs of a pod the node lacks: %d %q, want 404", code, body)
	}

	// kubectl port-forward: a busybox httpd in a host-network pod,
	// fetched through the API server and the node's /portForward.
	busybox := busyboxBinary(t)
	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("hello through the API server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackPort(t)
	_, port, _ := net.SplitHostPort(addr)
	httpd := k8sPodYAML("httpd", n.name, 2, fmt.Sprintf("exec %s httpd -f -p %s -h %s", busybox, addr, www))
	if out, err := cp.kubectlStdin(httpd, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply httpd: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, "httpd Running", func() (bool, string) {
		p, err := cp.client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "httpd", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, podSummary(p)
	})
	pf := kubectlCmd(cp, "port-forward", "pod/httpd", ":"+port)
	var pfOut proctest.Buffer
	pf.Stdout, pf.Stderr = &pfOut, &pfOut
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pf.Process.Kill(); _ = pf.Wait() })
	fwd := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> ` + port)
	var local string
	eventually(t, 30*time.Second, "kubectl port-forward listening", func() (bool, string) {
		if m := fwd.FindStringSubmatch(pfOut.String()); m != nil {
			local = m[1]
		}
		return local != "", pfOut.String()
	})
	for i := range 2 { // each connection is its own stream pair
		resp, err := http.Get("http://" + local + "/index.html")
		if err != nil {
			t.Fatalf("GET %d through kubectl port-forward: %v\n%s", i, err, pfOut.String())
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(body) != "hello through the API server\n" {
			t.Fatalf("GET %d through kubectl port-forward: %d %q %v", i, resp.StatusCode, body, err)
		}
	}
	_ = pf.Process.Kill()

	// kubectl attach (k8s_attach_test.go), on this control plane and node.
	t.Run("kubectl attach", func(t *testing.T) { checkKubectlAttach(t, cp, n) })

	cp.mustKubectl("delete", "pod", "talker", "httpd", "--timeout=60s")
}
