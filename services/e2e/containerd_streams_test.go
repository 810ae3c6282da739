package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	"github.com/syncpod/syncpod/internal/proctest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/ctl"
)

// Streams against the real containerd of make test: exec with and without a
// terminal, attach to a ticking container, logs, port-forward to a
// host-network busybox httpd on a loopback port, and top, all through
// syncpodctl, the planner, the executor and containerd's own streaming
// server.
func TestStreamsOnContainerd(t *testing.T) {
	endpoint := nodeOnContainerd(t) // skips loudly, or fails in CI/as root
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
		c("busy", "sh", "-c", `trap 'exit 0' TERM; while :; do :; done`),
		c("reader", "sh", "-c", `while read l; do echo "got $l"; done; sleep 3600`))
	// Its input is kept for attach, and closed when the first one ends.
	p.Spec.Containers[3].Stdin, p.Spec.Containers[3].StdinOnce = true, true
	p.Spec.HostNetwork = true
	n.apply(p)
	crashy := pod("crashy", c("crash", "sh", "-c", `echo "run at $(date +%s%N)"; exit 3`))
	crashy.Spec.HostNetwork = true
	n.apply(crashy)
	// wait returns when the pod is Ready.
	if code, out, errOut := n.ctl("wait", "--for=condition=Ready", "pod/streams", "--timeout=60s"); code != 0 || out != "pod/streams condition met\n" {
		t.Fatalf("wait: exit %d %q %q", code, out, errOut)
	}
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
	var aout, aerr proctest.Buffer
	actx, acancel := context.WithTimeout(context.Background(), time.Minute)
	defer acancel()
	adone := make(chan int, 1)
	go func() {
		adone <- ctl.Run(actx, []string{"--server=" + target(n.planner.grpc), "attach", "streams", "-c", "tick"}, ctl.Env{Stdout: &aout, Stderr: &aerr, Getenv: func(string) string { return "" }})
	}()
	eventually(t, 20*time.Second, "attach shows ticks", func() (bool, string) {
		return regexp.MustCompile(`tick \d+\n`).MatchString(aout.String()), aout.String() + aerr.String()
	})
	acancel()
	if code := <-adone; code != 0 {
		t.Fatalf("attach: exit %d %q", code, aerr.String())
	}

	// attach -i to a container reading stdin: the lines go in, the
	// answers come back; the session ends once its input is closed
	// (stdinOnce) and Ctrl-C leaves.
	var rout, rerr proctest.Buffer
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	rdone := make(chan int, 1)
	go func() {
		rdone <- ctl.Run(rctx, []string{"--server=" + target(n.planner.grpc), "attach", "-i", "streams", "-c", "reader"},
			ctl.Env{Stdin: strings.NewReader("one\ntwo\n"), Stdout: &rout, Stderr: &rerr, Getenv: func(string) string { return "" }})
	}()
	eventually(t, 20*time.Second, "attach -i shows the answers", func() (bool, string) {
		return rout.String() == "got one\ngot two\n", rout.String() + rerr.String()
	})
	rcancel()
	<-rdone

	if code, out, errOut := n.runCtl("", "logs", "streams", "-c", "tick", "--tail", "2"); code != 0 || strings.Count(out, "tick ") != 2 {
		t.Fatalf("logs --tail 2: exit %d %q %q", code, out, errOut)
	}

	// port-forward to the httpd on a loopback port.
	var pout, perr proctest.Buffer
	pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	pdone := make(chan int, 1)
	go func() {
		pdone <- ctl.Run(pctx, []string{"--server=" + target(n.planner.grpc), "port-forward", "streams", ":" + port}, ctl.Env{Stdout: &pout, Stderr: &perr, Getenv: func(string) string { return "" }})
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

	// --previous after a crash: the dead instance's output.
	n.waitRecord("crashy", time.Minute, "restarted once", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "crash").GetRestartCount() >= 1
	})
	if code, prev, e := n.ctl("logs", "crashy", "--previous"); code != 0 || !strings.Contains(prev, "run at ") {
		t.Fatalf("logs --previous: exit %d %q %q", code, prev, e)
	}

	// logs -f follows the ticking container until it is killed (the pod
	// is deleted), every line once, in order.
	var fout, ferr proctest.Buffer
	fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer fcancel()
	fdone := make(chan int, 1)
	go func() {
		fdone <- ctl.Run(fctx, []string{"--server=" + target(n.planner.grpc), "logs", "-f", "streams", "-c", "tick"}, ctl.Env{Stdout: &fout, Stderr: &ferr, Getenv: func(string) string { return "" }})
	}()
	var first int
	eventually(t, 20*time.Second, "logs -f shows ticks", func() (bool, string) {
		m := regexp.MustCompile(`(?m)^tick (\d+)$`).FindAllStringSubmatch(fout.String(), -1)
		if len(m) < 3 {
			return false, fout.String() + ferr.String()
		}
		first, _ = strconv.Atoi(m[0][1])
		return true, ""
	})
	if code, out, errOut := n.ctl("delete", "pod", "streams", "crashy", "--grace-period", "3"); code != 0 {
		t.Fatalf("delete: exit %d %q %q", code, out, errOut)
	}
	select {
	case code := <-fdone:
		if code != 0 {
			t.Fatalf("logs -f: exit %d %q", code, ferr.String())
		}
	case <-fctx.Done():
		t.Fatal("logs -f did not end when its container was killed")
	}
	for i, l := range strings.Split(strings.TrimSpace(fout.String()), "\n") {
		if want := "tick " + strconv.Itoa(first+i); l != want {
			t.Fatalf("line %d is %q, want %q (lines lost or repeated):\n%s", i, l, want, fout.String())
		}
	}
}
