package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/syncpod/syncpod/services/ctl"
)

// runCtl runs syncpodctl against the node with the given standard input.
func (n *node) runCtl(stdin any, args ...string) (int, string, string) {
	n.t.Helper()
	var out, errOut syncBuffer
	env := ctl.Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	switch in := stdin.(type) {
	case string:
		env.Stdin = strings.NewReader(in)
	case interface{ Read([]byte) (int, error) }:
		env.Stdin = in
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := ctl.Run(ctx, append([]string{"--server=" + n.planner.grpc}, args...), env)
	return code, out.String(), errOut.String()
}

// Issue 14: syncpodctl exec through the planner and the executor to
// crisim's streaming server: output apart, standard input, exit codes,
// and a terminal when the caller has one.
func TestExecOnCrisim(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	n.apply(pod("shell", sleeper("main"), sleeper("other")))
	n.apply(pod("busy", container("loop", "sh", "-c", "while :; do :; done")))
	n.waitRunning("shell", converge)
	n.waitRunning("busy", converge)

	// top shows the busy loop's CPU use, from crisim's CRI stats.
	cpu := regexp.MustCompile(`(?m)^busy\s+(\d+)m\s+(\d+)Mi$`)
	eventually(t, 20*time.Second, "top pods shows CPU use of the busy loop", func() (bool, string) {
		code, out, errOut := n.runCtl("", "top", "pods")
		m := cpu.FindStringSubmatch(out)
		return code == 0 && m != nil && m[1] != "0", out + errOut
	})

	code, out, errOut := n.runCtl("", "exec", "shell", "-c", "other", "--", "sh", "-c", "echo out; echo err >&2; exit 4")
	if code != 4 || out != "out\n" || !strings.Contains(errOut, "err\n") || !strings.Contains(errOut, "command terminated with exit code 4") {
		t.Fatalf("exec: exit %d out %q err %q", code, out, errOut)
	}
	code, out, errOut = n.runCtl("hi\n", "exec", "-i", "shell", "--", "sh", "-c", "read x; echo got $x")
	if code != 0 || out != "got hi\n" || !strings.Contains(errOut, `Defaulted container "main"`) {
		t.Fatalf("exec -i: exit %d out %q err %q", code, out, errOut)
	}
	if code, _, errOut := n.runCtl("", "exec", "shell", "-c", "nosuch", "--", "true"); code != 3 || !strings.Contains(errOut, "choose one of [main other]") {
		t.Fatalf("exec in a wrong container: exit %d %q", code, errOut)
	}

	// crisim keeps no stdin: attach is refused with the reason.
	if code, _, errOut := n.runCtl("", "attach", "shell"); code != 1 || !strings.Contains(errOut, "cannot attach") {
		t.Fatalf("attach on crisim: exit %d %q", code, errOut)
	}

	// With a terminal: syncpodctl's stdin is a pty, as in a shell.
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("no pty on this machine: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 90}); err != nil {
		t.Fatal(err)
	}
	if _, err := ptmx.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = n.runCtl(tty, "exec", "-it", "shell", "--", "sh", "-c", "tty; read x; echo read $x; exit 2")
	if code != 2 || !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "read typed") {
		t.Fatalf("exec -it: exit %d out %q err %q", code, out, errOut)
	}
}
