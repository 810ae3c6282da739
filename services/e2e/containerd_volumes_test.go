package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestSiteExampleOnContainerd runs examples/site.yaml through the whole
// stack on the real containerd of make test: the ConfigMap and the Secret
// go to the planner, the pod's containers read the mounted config file, the
// Secret env var and the sidecar's page from the shared emptyDir (their
// logs prove it); a changed ConfigMap reaches the file in place without a
// restart; deleting the pod removes its volumes. Then image volumes on
// the same node (checkImageVolumesOnContainerd).
func TestSiteExampleOnContainerd(t *testing.T) {
	endpoint := nodeOnContainerd(t) // skips loudly, or fails in CI/as root
	n := startNode(t, nodeOptions{criEndpoint: endpoint})
	b, err := os.ReadFile("../../examples/site.yaml")
	if err != nil {
		t.Fatal(err)
	}
	manifest := strings.ReplaceAll(string(b), "image: busybox:1.36", "image: "+containerdtest.BusyboxImage())
	file := filepath.Join(t.TempDir(), "site.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := n.ctl("apply", "-f", file); code != 0 {
		t.Fatalf("apply site.yaml: exit %d: %s %s", code, out, errOut)
	}
	rec := n.waitRecord("site", 2*time.Minute, "Running with the server ready", func(r *plannerv1.PodRecord) bool {
		return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING && allReady(r)
	})
	uid := rec.GetPod().GetUid()
	logs := func(want string) string {
		t.Helper()
		var out string
		eventually(t, time.Minute, "the server's log to show "+want, func() (bool, string) {
			_, out, _ = n.ctl("logs", "site", "-c", "server")
			return strings.Contains(out, want), out
		})
		return out
	}
	out := logs("config greeting=hello from site-config; serving <h1>site</h1>")
	if !strings.Contains(out, "admin password set (9 characters)") {
		t.Errorf("the Secret did not reach the server's environment:\n%s", out)
	}

	changed := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site-config}\ndata:\n  site.conf: |\n    greeting=changed on containerd\n"
	if code, o, e := n.runCtl(changed, "apply", "-f", "-"); code != 0 {
		t.Fatalf("apply the changed ConfigMap: exit %d %s %s", code, o, e)
	}
	logs("config greeting=changed on containerd")
	rec, err = n.get("site")
	if err != nil {
		t.Fatal(err)
	}
	if c := cstatus(rec, "server"); c.GetRestartCount() != 0 || c.GetState().GetRunning() == nil {
		t.Errorf("the server after the ConfigMap change: %v", c)
	}

	podDir := filepath.Join(filepath.Dir(n.workDir), "executor", "pods", uid)
	if _, err := os.Stat(filepath.Join(podDir, "volumes", "empty-dir", "pages")); err != nil {
		t.Fatalf("the emptyDir is not under the executor's data dir: %v", err)
	}
	if code, o, e := n.ctl("delete", "pod", "site", "--grace-period", "2"); code != 0 {
		t.Fatalf("delete: exit %d %s %s", code, o, e)
	}
	eventually(t, time.Minute, "the pod's volumes removed", func() (bool, string) {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err), fmt.Sprintf("stat %s: %v", podDir, err)
	})
	checkImageVolumesOnContainerd(t, n)
}
