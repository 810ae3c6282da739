package e2e

import (
	"context"
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

	"github.com/syncpod/syncpod/internal/proctest"
	"github.com/syncpod/syncpod/services/ctl"
)

// busyboxBinary finds busybox for an httpd container; in CI or as root its
// absence is a failure, elsewhere a loud skip.
func busyboxBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("busybox")
	if err != nil {
		msg := "LOUD SKIP: no busybox on PATH (Debian: busybox-static) to serve HTTP from a container"
		if os.Getenv("CI") == "true" || os.Geteuid() == 0 {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// TestPortForwardOnCrisim: syncpodctl port-forward to a host-network
// busybox httpd on a loopback port, through the planner, the executor and
// crisim's streaming server; a page is fetched through the forward.
func TestPortForwardOnCrisim(t *testing.T) {
	t.Parallel()
	busybox := busyboxBinary(t)
	n := startNode(t, nodeOptions{})
	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("hello from the pod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackPort(t)
	_, port, _ := net.SplitHostPort(addr)
	p := pod("web", container("httpd", busybox, "httpd", "-f", "-p", addr, "-h", www))
	p.Spec.HostNetwork = true
	n.apply(p)
	n.waitRunning("web", converge)

	var out, errOut proctest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- ctl.Run(ctx, []string{"--server=" + target(n.planner.grpc), "port-forward", "web", ":" + port}, ctl.Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})
	}()
	fwd := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> ` + port)
	var local string
	eventually(t, 20*time.Second, "port-forward listening", func() (bool, string) {
		m := fwd.FindStringSubmatch(out.String())
		if m != nil {
			local = m[1]
		}
		return m != nil, out.String() + errOut.String()
	})
	for i := range 3 { // several connections, each its own stream
		resp, err := http.Get("http://" + local + "/index.html")
		if err != nil {
			t.Fatalf("GET %d through the forward: %v (%s)", i, err, errOut.String())
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(body) != "hello from the pod\n" {
			t.Fatalf("GET %d: %d %q %v", i, resp.StatusCode, body, err)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("port-forward exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(local, "127.0.0.1:") {
		t.Fatalf("listening on %s, not loopback", local)
	}
}
