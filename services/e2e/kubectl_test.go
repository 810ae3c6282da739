package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/internal/proctest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/services/ctl"
)

// The commands a kubectl user reaches for, against a node of real processes
// on crisim: wait, logs -f until the container is killed, logs --previous
// after a crash, get -o yaml taken back by apply, events, plan against the
// live pod, back-offs by name.
func TestKubectlStyleCommandsOnCrisim(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	n.apply(pod("ticker", container("tick", "sh", "-c", `i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done`)))
	n.apply(pod("crashy", container("crash", "sh", "-c", `echo "run at $(date +%s%N)"; echo "to stderr" >&2; exit 3`)))

	if code, out, errOut := n.ctl("wait", "--for=condition=Ready", "pod/ticker", "--timeout=45s"); code != 0 || out != "pod/ticker condition met\n" {
		t.Fatalf("wait: exit %d %q %q", code, out, errOut)
	}

	// logs -f follows the ticking container until it is killed.
	var out, errOut proctest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- ctl.Run(ctx, []string{"--server=" + target(n.planner.grpc), "logs", "-f", "ticker"}, ctl.Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})
	}()
	eventually(t, 20*time.Second, "logs -f shows new ticks", func() (bool, string) {
		return strings.Contains(out.String(), "tick 5\n"), out.String()
	})
	if code, o, e := n.ctl("delete", "pod", "ticker", "--grace-period=0"); code != 0 {
		t.Fatalf("delete: exit %d %q %q", code, o, e)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("logs -f: exit %d %q", code, errOut.String())
		}
	case <-ctx.Done():
		t.Fatal("logs -f did not end when its container was killed")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, l := range lines {
		if want := "tick " + strconv.Itoa(i+1); l != want {
			t.Fatalf("line %d is %q, want %q (lines lost or repeated):\n%s", i, l, want, out.String())
		}
	}

	// --previous after a crash: the dead instance's output.
	n.waitRecord("crashy", converge, "restarted once", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "crash").GetRestartCount() >= 1
	})
	code, prev, e := n.ctl("logs", "crashy", "--previous", "--timestamps")
	if code != 0 || !strings.Contains(prev, "run at ") || !strings.Contains(prev, "to stderr") || !strings.Contains(prev, "Z run at") {
		t.Fatalf("logs --previous: exit %d %q %q", code, prev, e)
	}
	if code, _, e := n.ctl("logs", "crashy", "-c", "nosuch"); code != 3 || !strings.Contains(e, "choose one of [crash]") {
		t.Fatalf("logs of a wrong container: exit %d %q", code, e)
	}

	// backoffs by name.
	if code, o, e := n.ctl("backoffs", "list", "crashy"); code != 0 || !strings.Contains(o, "default/crashy") {
		t.Fatalf("backoffs list crashy: exit %d %q %q", code, o, e)
	}
	if code, o, e := n.ctl("backoffs", "reset", "crashy", "-c", "crash"); code != 0 || !strings.Contains(o, "cleared") {
		t.Fatalf("backoffs reset crashy: exit %d %q %q", code, o, e)
	}

	// get -o yaml is taken back unchanged by apply.
	code, y, e := n.ctl("get", "pod", "crashy", "-o", "yaml")
	if code != 0 || !strings.Contains(y, "kind: Pod") {
		t.Fatalf("get -o yaml: exit %d %q", code, e)
	}
	f := filepath.Join(t.TempDir(), "crashy.yaml")
	if err := os.WriteFile(f, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, o, e := n.ctl("apply", "-f", f); code != 0 || o != "pod/crashy unchanged\n" {
		t.Fatalf("apply of get -o yaml: exit %d %q %q", code, o, e)
	}

	// plan against the live pod: the crashed container's restart, with
	// its reason; against an empty node: a sandbox first.
	code, plan, e := n.ctl("--pleg="+target(n.pleg.grpc), "plan", "-f", f)
	if code != 0 || !strings.Contains(e, "Planning against pod/crashy as observed") || strings.Contains(plan, "create a sandbox") {
		t.Fatalf("plan against the live pod: exit %d\n%s\n%s", code, plan, e)
	}
	if code, plan, e := n.ctl("plan", "-f", f, "--empty"); code != 0 || !strings.Contains(plan, "create a sandbox") {
		t.Fatalf("plan --empty: exit %d\n%s\n%s", code, plan, e)
	}

	// events: a table with counts; an unknown pod is exit 3.
	// (BackOff once the crash loop has reached its first back-off.)
	eventually(t, time.Minute, "events crashy: a table with a BackOff row", func() (bool, string) {
		code, o, e := n.ctl("events", "crashy")
		return code == 0 && strings.Contains(o, "COUNT") && strings.Contains(o, "BackOff"), fmt.Sprintf("exit %d\n%s\n%s", code, o, e)
	})
	if code, _, _ := n.ctl("events", "nosuch"); code != 3 {
		t.Fatalf("events of an unknown pod: exit %d, want 3", code)
	}
	// version: the client, and every server of this node, with the runtime.
	code, v, e := n.ctl("version")
	for _, want := range []string{"Client Version: ", "Planner Version: ", "Executor Version: ", "PLEG Version: ", "runtime syncpod-crisim "} {
		if code != 0 || !strings.Contains(v, want) {
			t.Fatalf("version: exit %d, no %q\n%s%s", code, want, v, e)
		}
	}

	// Completion, as a shell does it: bash loads the script the binary
	// prints, and the completion function asks the binary, which asks the
	// planner, for the pod names.
	t.Run("completion in bash", func(t *testing.T) {
		// cobra's script uses the bash-completion package, as shells that
		// complete anything have it (make test installs it, as root).
		const bashCompletion = "/usr/share/bash-completion/bash_completion"
		bash, err := exec.LookPath("bash")
		if _, serr := os.Stat(bashCompletion); err != nil || serr != nil {
			if os.Getenv("CI") != "" || os.Getuid() == 0 {
				t.Fatalf("bash with the bash-completion package is needed (apt-get install bash-completion): %v %v", err, serr)
			}
			t.Skipf("LOUD SKIP: no bash with bash-completion here: %v %v", err, serr)
		}
		script := `source ` + bashCompletion + ` || exit 1
source <("$CTL" completion bash) || exit 1
COMP_WORDS=("$CTL" --server="$SERVER" describe pod cr)
COMP_CWORD=4
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
__start_syncpodctl
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "-c", script)
		cmd.Env = append(os.Environ(), "CTL="+binary(t, "syncpodctl"), "SERVER="+target(n.planner.grpc))
		comp, err := cmd.Output() // stderr: bash's compopt outside a real completion
		if err != nil || strings.TrimSpace(string(comp)) != "crashy" {
			t.Fatalf("bash completion of \"describe pod cr\": %v\n%s", err, comp)
		}
	})

	if code, o, e := n.ctl("delete", "pod/crashy"); code != 0 {
		t.Fatalf("delete crashy: exit %d %q %q", code, o, e)
	}
	if code, _, _ := n.ctl("get", "pod", "crashy"); code != 3 {
		t.Fatal("delete returned before the pod was gone")
	}
}
