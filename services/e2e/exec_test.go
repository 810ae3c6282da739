package e2e

import (
	"context"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/syncpod/syncpod/internal/proctest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/ctl"
)

// runCtl runs syncpodctl against the node with the given standard input.
func (n *node) runCtl(stdin any, args ...string) (int, string, string) {
	n.t.Helper()
	var out, errOut proctest.Buffer
	env := ctl.Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	switch in := stdin.(type) {
	case string:
		env.Stdin = strings.NewReader(in)
	case interface{ Read([]byte) (int, error) }:
		env.Stdin = in
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := ctl.Run(ctx, append([]string{"--server=" + target(n.planner.grpc)}, args...), env)
	return code, out.String(), errOut.String()
}

// TestExecOnCrisim: syncpodctl exec through the planner and the executor to
// crisim's streaming server: output apart, standard input, exit codes, and
// a terminal when the caller has one.
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

	// attach to a container reading stdin (stdin: true, stdinOnce): what
	// syncpodctl attach -i reads goes in, the output comes back, and the
	// session ends when the container does (its input closed).
	reader := pod("reader", container("echo", "sh", "-c", `while read l; do echo "got $l"; done; exit 6`))
	reader.Spec.Containers[0].Stdin, reader.Spec.Containers[0].StdinOnce = true, true
	reader.Spec.RestartPolicy = syncpodv1.RestartPolicy_RESTART_POLICY_NEVER
	n.apply(reader)
	n.waitRunning("reader", converge)
	if code, out, errOut := n.runCtl("one\ntwo\n", "attach", "-i", "reader"); code != 0 || out != "got one\ngot two\n" {
		t.Fatalf("attach -i: exit %d out %q err %q", code, out, errOut)
	}
	n.waitRecord("reader", converge, "the reader exited 6", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "echo").GetState().GetTerminated().GetExitCode() == 6
	})
	// Input to a container created without stdin is refused, saying why.
	if code, _, errOut := n.runCtl("x\n", "attach", "-i", "shell"); code != 1 || !strings.Contains(errOut, "stdin: true") {
		t.Fatalf("attach -i to a container without stdin: exit %d %q", code, errOut)
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

	// Terminal resize, end to end: the command's terminal takes the size
	// of syncpodctl's, and follows it when it changes (SIGWINCH, as a
	// terminal emulator sends it).
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 90}); err != nil {
		t.Fatal(err)
	}
	var rout, rerr proctest.Buffer
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	rdone := make(chan int, 1)
	go func() {
		rdone <- ctl.Run(rctx, []string{"--server=" + target(n.planner.grpc), "exec", "-it", "shell", "--", "sh", "-c", "stty size; while read x; do stty size; done; exit 7"},
			ctl.Env{Stdin: tty, Stdout: &rout, Stderr: &rerr, Getenv: func(string) string { return "" }})
	}()
	// Output is written only once syncpodctl follows SIGWINCH. The first
	// `stty size` may run before the initial size reached the terminal
	// (it travels beside the command, as with kubectl; seen as "0 0" under
	// load): each line typed prints the size again.
	eventually(t, 20*time.Second, "the first size", func() (bool, string) {
		if !strings.Contains(rout.String(), "30 90") && rout.String() != "" {
			_, _ = ptmx.Write([]byte("\n"))
		}
		return strings.Contains(rout.String(), "30 90"), rout.String() + rerr.String()
	})
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 41, Cols: 123}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	// Each line typed makes the command print its terminal's size again.
	eventually(t, 20*time.Second, "the new size after the resize", func() (bool, string) {
		_, _ = ptmx.Write([]byte("\n"))
		return strings.Contains(rout.String(), "41 123"), rout.String() + rerr.String()
	})
	if code := ctrlDUntilDone(rctx, t, ptmx, rdone); code != 7 {
		t.Fatalf("exec -it with a resize: exit %d, want 7\n%s%s", code, rout.String(), rerr.String())
	}

	// attach -it to a container with a terminal (tty, stdin, stdinOnce):
	// lines typed reach it, it sees syncpodctl's terminal size, and
	// Ctrl-D ends its input, so it ends, and the session with it.
	term := pod("term", container("sh", "sh", "-c", `while read l; do stty size; done`))
	term.Spec.Containers[0].Stdin, term.Spec.Containers[0].StdinOnce, term.Spec.Containers[0].Tty = true, true, true
	term.Spec.RestartPolicy = syncpodv1.RestartPolicy_RESTART_POLICY_NEVER
	n.apply(term)
	n.waitRunning("term", converge)
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 33, Cols: 99}); err != nil {
		t.Fatal(err)
	}
	var aout, aerr proctest.Buffer
	actx, acancel := context.WithTimeout(context.Background(), time.Minute)
	defer acancel()
	adone := make(chan int, 1)
	go func() {
		adone <- ctl.Run(actx, []string{"--server=" + target(n.planner.grpc), "attach", "-it", "term"},
			ctl.Env{Stdin: tty, Stdout: &aout, Stderr: &aerr, Getenv: func(string) string { return "" }})
	}()
	eventually(t, 20*time.Second, "the container's terminal has syncpodctl's size", func() (bool, string) {
		_, _ = ptmx.Write([]byte("\n"))
		return strings.Contains(aout.String(), "33 99"), aout.String() + aerr.String()
	})
	if code := ctrlDUntilDone(actx, t, ptmx, adone); code != 0 {
		t.Fatalf("attach -it: exit %d\n%s%s", code, aout.String(), aerr.String())
	}
	n.waitRecord("term", converge, "the terminal container completed", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "sh").GetState().GetTerminated() != nil
	})
}

// ctrlDUntilDone types Ctrl-D (end of input in a cooked terminal) into
// the terminal until the session reports its exit code, again every half
// second: a reader an earlier session left on the same terminal may take
// one keystroke.
func ctrlDUntilDone(ctx context.Context, t *testing.T, ptmx *os.File, done <-chan int) int {
	t.Helper()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := ptmx.Write([]byte{4}); err != nil {
			t.Fatal(err)
		}
		select {
		case code := <-done:
			return code
		case <-ctx.Done():
			t.Fatal("the session did not end at Ctrl-D")
		case <-tick.C:
		}
	}
}
