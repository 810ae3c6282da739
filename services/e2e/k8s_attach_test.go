package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/syncpod/syncpod/internal/proctest"
)

// k8sStdinPodYAML is a pod bound to node whose one container, created
// with stdin and stdinOnce (and a terminal with tty), runs command and
// is not restarted.
func k8sStdinPodYAML(name, node string, tty bool, command string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  nodeName: %s
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox:1.36
    stdin: true
    stdinOnce: true
    tty: %t
    command: ["sh", "-c", %q]
`, name, node, tty, command)
}

// checkKubectlAttach drives kubectl attach (and kubectl run -i, which
// attaches) through the API server to a pod on node n, as a user at a
// terminal would: typed lines reach the container, its output comes
// back, its terminal follows kubectl's size, Ctrl-D ends its input. Run
// as a subtest of a test that already has a control plane and a node.
func checkKubectlAttach(t *testing.T, cp *controlPlane, n *k8sNode) {
	ctx := context.Background()
	podTerminated := func(t *testing.T, name string) *corev1.ContainerStateTerminated {
		t.Helper()
		var term *corev1.ContainerStateTerminated
		eventually(t, 60*time.Second, name+" terminated in the API", func() (bool, string) {
			p, err := cp.client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if len(p.Status.ContainerStatuses) == 1 {
				term = p.Status.ContainerStatuses[0].State.Terminated
			}
			return term != nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed), podSummary(p)
		})
		return term
	}
	waitRunning := func(t *testing.T, name string) {
		t.Helper()
		eventually(t, 60*time.Second, name+" Running", func() (bool, string) {
			p, err := cp.client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return p.Status.Phase == corev1.PodRunning, podSummary(p)
		})
	}

	// kubectl attach -it at a terminal: a container with its own terminal
	// answers each line typed with the line and its terminal's size.
	t.Run("attach -it", func(t *testing.T) {
		if out, err := cp.kubectlStdin(k8sStdinPodYAML("attach-term", n.name, true, `while read l; do echo "got $l"; stty size; done; echo bye`), "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		waitRunning(t, "attach-term")
		cmd := kubectlCmd(cp, "attach", "-it", "attach-term")
		ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 37, Cols: 111})
		if err != nil {
			t.Fatal(err)
		}
		defer ptmx.Close()
		var screen proctest.Buffer
		go func() {
			buf := make([]byte, 4096)
			for {
				k, err := ptmx.Read(buf)
				_, _ = screen.Write(buf[:k])
				if err != nil {
					return
				}
			}
		}()
		var waitErr error
		exited := make(chan struct{})
		go func() { waitErr = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			select {
			case <-exited:
			default:
				_ = cmd.Process.Kill()
				<-exited
			}
		})
		// kubectl puts its terminal in raw mode: Enter is a carriage
		// return, which the container's terminal turns into a newline.
		// Typed again until the answer shows (the session may not be
		// up when the first line is typed).
		eventually(t, 30*time.Second, "the typed line answered, with kubectl's terminal size", func() (bool, string) {
			_, _ = ptmx.Write([]byte("hello\r"))
			s := screen.String()
			return strings.Contains(s, "got hello") && strings.Contains(s, "37 111"), s
		})
		// A resize of kubectl's terminal reaches the container's.
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 45, Cols: 132}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the new terminal size after a resize", func() (bool, string) {
			_, _ = ptmx.Write([]byte("again\r"))
			s := screen.String()
			return strings.Contains(s, "got again") && strings.Contains(s, "45 132"), s
		})
		// Ctrl-D: end of input on the container's terminal (stdinOnce),
		// its loop ends, the container exits 0 and kubectl with it.
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		timeout := time.After(60 * time.Second)
	wait:
		for {
			_, _ = ptmx.Write([]byte{4})
			select {
			case <-exited:
				if waitErr != nil {
					t.Fatalf("kubectl attach -it after Ctrl-D: %v\n%s", waitErr, screen.String())
				}
				break wait
			case <-tick.C:
			case <-timeout:
				t.Fatalf("kubectl attach -it did not end at Ctrl-D\n%s", screen.String())
			}
		}
		if term := podTerminated(t, "attach-term"); term.ExitCode != 0 {
			t.Errorf("attach-term exit code %d, want 0 (its input ended)", term.ExitCode)
		}
		if strings.Contains(screen.String(), "not a tty") {
			t.Errorf("the container had no terminal:\n%s", screen.String())
		}
		logs := cp.mustKubectl("logs", "attach-term")
		if !strings.Contains(logs, "got hello") || !strings.Contains(logs, "bye") {
			t.Errorf("kubectl logs after the session: %q, want what was typed and bye", logs)
		}
		cp.mustKubectl("delete", "pod", "attach-term", "--timeout=60s")
	})

	// kubectl attach -i from a pipe: stdout and stderr come back apart,
	// the end of the pipe ends the container's input (stdinOnce).
	t.Run("attach -i", func(t *testing.T) {
		if out, err := cp.kubectlStdin(k8sStdinPodYAML("attach-pipe", n.name, false, `while read l; do echo "got $l"; echo "seen $l" >&2; done; exit 4`), "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		waitRunning(t, "attach-pipe")
		cmd := kubectlCmd(cp, "attach", "-i", "attach-pipe")
		cmd.Stdin = strings.NewReader("one\ntwo\n")
		var stdout, stderr proctest.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := runWithin(cmd, 60*time.Second); err != nil {
			t.Fatalf("kubectl attach -i: %v\nstdout %q\nstderr %q", err, stdout.String(), stderr.String())
		}
		if stdout.String() != "got one\ngot two\n" {
			t.Errorf("kubectl attach -i stdout %q, want the container's stdout only", stdout.String())
		}
		if !strings.Contains(stderr.String(), "seen one\nseen two\n") || strings.Contains(stderr.String(), "got ") {
			t.Errorf("kubectl attach -i stderr %q, want the container's stderr", stderr.String())
		}
		if term := podTerminated(t, "attach-pipe"); term.ExitCode != 4 {
			t.Errorf("attach-pipe exit code %d, want 4", term.ExitCode)
		}
		cp.mustKubectl("delete", "pod", "attach-pipe", "--timeout=60s")
	})

	// kubectl run -i --rm: creates the pod, attaches once it runs, hands
	// back the container's exit code and deletes the pod. (--command:
	// crisim runs no image entrypoint, so the command, not args.)
	t.Run("run -i --rm", func(t *testing.T) {
		overrides := fmt.Sprintf(`{"spec":{"nodeName":%q,"hostNetwork":true,"terminationGracePeriodSeconds":2}}`, n.name)
		cmd := kubectlCmd(cp, "run", "attach-run", "-i", "--rm", "--restart=Never", "--image=busybox:1.36",
			"--overrides="+overrides, "--pod-running-timeout=60s", "--command", "--", "sh", "-c", `read l; echo "got $l"; exit 5`)
		cmd.Stdin = strings.NewReader("hi\n")
		var out proctest.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := runWithin(cmd, 90*time.Second)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 5 || !strings.Contains(out.String(), "got hi\n") {
			t.Fatalf("kubectl run -i --rm: %v, output %q; want got hi and exit code 5", err, out.String())
		}
		if !strings.Contains(out.String(), `pod "attach-run" deleted`) {
			t.Errorf("kubectl run --rm: %q, want the pod deleted", out.String())
		}
		if _, err := cp.client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "attach-run", metav1.GetOptions{}); err == nil {
			// kubectl returns once the deletion is accepted: the node then
			// kills the container and removes the object.
			eventually(t, 60*time.Second, "attach-run gone", func() (bool, string) {
				_, err := cp.client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "attach-run", metav1.GetOptions{})
				return err != nil, fmt.Sprint(err)
			})
		}
	})
}

// runWithin runs cmd, killing it after d.
func runWithin(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	timer := time.AfterFunc(d, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	return cmd.Wait()
}
