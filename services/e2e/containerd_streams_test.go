package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/containerdtest"
	"github.com/syncpod/syncpod/services/ctl"
)

// Issue 14 against the real containerd of make test: exec with and
// without a terminal, attach to a ticking container, logs, port-forward
// to a host-network busybox httpd on a loopback port, and top, all
// through syncpodctl, the planner, the executor and containerd's own
// streaming server.
func TestStreamsOnContainerd(t *testing.T) {
	endpoint := containerdtest.Endpoint(t) // skips loudly, or fails in CI/as root
	busybox := containerdtest.BusyboxImage()
	n := startNode(t, nodeOptions{criEndpoint: endpoint})
	c := func(name string, cmd ...string) *syncpodv1.Container {
		return &syncpodv1.Container{Name: name, Image: busybox, Command: cmd, ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}
	}
	addr := freeLoopbackPort(t)
	_, port, _ := net.SplitHostPort(addr)
	p := pod("streams",
		c("tick", "sh", "-c", `trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done`),
		c("httpd", "sh", "-c", `mkdir -p /tmp/www && echo "hello from containerd" > /tmp/www/index.html && exec /bin/busybox httpd -f -p `+addr+` -h /tmp/www`),
		c("busy", "sh", "-c", `trap 'exit 0' TERM; while :; do :; done`))
	p.Spec.HostNetwork = true
	n.apply(p)
	n.waitRunning("streams", time.Minute)

	code, out, errOut := n.runCtl("", "exec", "streams", "-c", "tick", "--", "sh", "-c", "echo out; echo err >&2; exit 4")
	if code != 4 || out != "out\n" || !strings.Contains(errOut, "err\n") {
		t.Fatalf("exec: exit %d out %q err %q", code, out, errOut)
	}
	code, out, errOut = n.runCtl("hi\n", "exec", "-i", "streams", "-c", "tick", "--", "sh", "-c", "read x; echo got $x")
	if code != 0 || out != "got hi\n" {
		t.Fatalf("exec -i: exit %d out %q err %q", code, out, errOut)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("no pty: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if _, err := ptmx.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = n.runCtl(tty, "exec", "-it", "streams", "-c", "tick", "--", "sh", "-c", "tty; read x; echo read $x; exit 2")
	if code != 2 || !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "read typed") {
		t.Fatalf("exec -it: exit %d out %q err %q", code, out, errOut)
	}

	// attach shows the ticking container's output until we leave.
	var aout, aerr syncBuffer
	actx, acancel := context.WithTimeout(context.Background(), time.Minute)
	defer acancel()
	adone := make(chan int, 1)
	go func() {
		adone <- ctl.Run(actx, []string{"--server=" + n.planner.grpc, "attach", "streams", "-c", "tick"}, ctl.Env{Stdout: &aout, Stderr: &aerr, Getenv: func(string) string { return "" }})
	}()
	eventually(t, 20*time.Second, "attach shows ticks", func() (bool, string) {
		return regexp.MustCompile(`tick \d+\n`).MatchString(aout.String()), aout.String() + aerr.String()
	})
	acancel()
	if code := <-adone; code != 0 {
		t.Fatalf("attach: exit %d %q", code, aerr.String())
	}

	if code, out, errOut := n.runCtl("", "logs", "streams", "-c", "tick", "--tail", "2"); code != 0 || strings.Count(out, "tick ") != 2 {
		t.Fatalf("logs --tail 2: exit %d %q %q", code, out, errOut)
	}

	// port-forward to the httpd on a loopback port.
	var pout, perr syncBuffer
	pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	pdone := make(chan int, 1)
	go func() {
		pdone <- ctl.Run(pctx, []string{"--server=" + n.planner.grpc, "port-forward", "streams", ":" + port}, ctl.Env{Stdout: &pout, Stderr: &perr, Getenv: func(string) string { return "" }})
	}()
	fwd := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+)`)
	var local string
	eventually(t, 20*time.Second, "port-forward listening", func() (bool, string) {
		m := fwd.FindStringSubmatch(pout.String())
		if m != nil {
			local = m[1]
		}
		return m != nil, pout.String() + perr.String()
	})
	resp, err := http.Get("http://" + local + "/index.html")
	if err != nil {
		t.Fatalf("GET through the forward: %v (%s)", err, perr.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello from containerd\n" {
		t.Fatalf("GET: %d %q", resp.StatusCode, body)
	}
	pcancel()
	if code := <-pdone; code != 0 {
		t.Fatalf("port-forward: exit %d %q", code, perr.String())
	}

	// top: the busy loop's CPU from containerd's stats.
	cpu := regexp.MustCompile(`(?m)^streams\s+busy\s+(\d+)m`)
	eventually(t, 30*time.Second, "top shows the busy loop's CPU", func() (bool, string) {
		code, out, errOut := n.runCtl("", "top", "pods", "--containers")
		m := cpu.FindStringSubmatch(out)
		return code == 0 && m != nil && m[1] != "0", out + errOut
	})

	if code, out, errOut := n.ctl("delete", "pod", "streams", "--grace-period", "3"); code != 0 {
		t.Fatalf("delete: exit %d %q %q", code, out, errOut)
	}
}
