package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// TestSecurityHooksAndMessagesOnContainerd applies, with syncpodctl, a
// Pod manifest using the security context, a failing postStart hook,
// termination messages and runAsNonRoot, and checks what the containers
// did on containerd and what the planner reports: the user asked for
// (`id -u` in the log), the messages read back into the terminated states,
// FailedPostStartHook, and the refused start with
// CreateContainerConfigError and its event.
func TestSecurityHooksAndMessagesOnContainerd(t *testing.T) {
	endpoint := nodeOnContainerd(t)
	busybox := containerdtest.BusyboxImage()
	n := startNode(t, nodeOptions{criEndpoint: endpoint})
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: secure}
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  securityContext: {runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000]}
  containers:
  - name: whoami
    image: ` + busybox + `
    imagePullPolicy: Never
    command: ["sh", "-c", "echo uid=$(id -u) gid=$(id -g); echo msg from $(id -u) > /dev/termination-log"]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  - name: fails
    image: ` + busybox + `
    imagePullPolicy: Never
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "echo last words; exit 3"]
  - name: hooked
    image: ` + busybox + `
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    lifecycle: {postStart: {exec: {command: ["sh", "-c", "exit 7"]}}}
  - name: nonroot
    image: ` + busybox + `
    imagePullPolicy: Never
    command: ["true"]
    securityContext: {runAsUser: 0, runAsNonRoot: true}
`
	file := filepath.Join(t.TempDir(), "secure.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := n.ctl("apply", "-f", file); code != 0 {
		t.Fatalf("apply: exit %d: %s %s", code, out, errOut)
	}
	rec := n.waitRecord("secure", 90*time.Second, "whoami and fails terminated, hook failed, nonroot refused", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "whoami").GetState().GetTerminated() != nil && cstatus(r, "fails").GetState().GetTerminated() != nil &&
			findEvent(r, "FailedPostStartHook", "hooked") != nil &&
			cstatus(r, "nonroot").GetState().GetWaiting().GetReason() == "CreateContainerConfigError"
	})
	if got := cstatus(rec, "whoami").GetState().GetTerminated().GetMessage(); got != "msg from 1000\n" {
		t.Errorf("whoami termination message %q, want the file's", got)
	}
	if term := cstatus(rec, "fails").GetState().GetTerminated(); term.GetExitCode() != 3 || term.GetMessage() != "last words\n" {
		t.Errorf("fails terminated %d %q, want 3 and the log tail", term.GetExitCode(), term.GetMessage())
	}
	if code, out, errOut := n.ctl("logs", "secure", "-c", "whoami"); code != 0 || !strings.Contains(out, "uid=1000 gid=3000") {
		t.Errorf("whoami log (exit %d): %q %s", code, out, errOut)
	}
	wantRefusal := `container's runAsUser breaks non-root policy (pod: "secure_default(` + rec.GetPod().GetUid() + `)", container: nonroot)`
	if w := cstatus(rec, "nonroot").GetState().GetWaiting(); w.GetMessage() != wantRefusal {
		t.Errorf("nonroot waiting message %q, want %q", w.GetMessage(), wantRefusal)
	}
	if e := findEvent(rec, "Failed", "nonroot"); e == nil || e.GetMessage() != "Error: "+wantRefusal {
		t.Errorf("Failed event of nonroot: %v", e)
	}
	if e := findEvent(rec, "FailedPostStartHook", "hooked"); e.GetMessage() != "PostStartHook failed" {
		t.Errorf("FailedPostStartHook event: %v", e)
	}
	if _, cs := n.runtimeOf(rec.GetPod().GetUid()); len(cs) != 3 {
		t.Errorf("%d containers in containerd, want 3 (nonroot never created)", len(cs))
	}
}
