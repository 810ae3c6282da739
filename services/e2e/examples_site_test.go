package e2e

import (
	"strings"
	"testing"
	"time"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// checkSiteExample checks examples/site.yaml on crisim: the server reads
// its ConfigMap-mounted config and its Secret env var, serves what the
// sidecar writes into the shared emptyDir, and a changed ConfigMap reaches
// the mounted file in place, restarting nothing.
func checkSiteExample(t *testing.T, n *node) {
	t.Helper()
	n.waitRecord("site", time.Minute, "Running with the server ready", func(r *plannerv1.PodRecord) bool {
		return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING && allReady(r)
	})
	waitLogs := func(want string) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			_, out, _ := n.ctl("logs", "site", "-c", "server")
			if strings.Contains(out, want) {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("site server log never showed %q:\n%s", want, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	out := waitLogs("config greeting=hello from site-config; serving <h1>site</h1>")
	if !strings.Contains(out, "admin password set (9 characters)") {
		t.Errorf("the Secret did not reach the server's environment:\n%s", out)
	}
	if code, list, _ := n.ctl("get", "configmaps"); code != 0 || !strings.Contains(list, "site-config") {
		t.Errorf("get configmaps: exit %d\n%s", code, list)
	}
	if code, list, _ := n.ctl("get", "secrets"); code != 0 || !strings.Contains(list, "site-creds") || strings.Contains(list, "change-me") {
		t.Errorf("get secrets: exit %d\n%s", code, list)
	}

	changed := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site-config}\ndata:\n  site.conf: |\n    listen=127.0.0.1:8088\n    greeting=changed in place\n"
	if code, o, e := n.runCtl(changed, "apply", "-f", "-"); code != 0 || !strings.Contains(o, "configmap/site-config configured") {
		t.Fatalf("apply the changed ConfigMap: exit %d %s %s", code, o, e)
	}
	waitLogs("config greeting=changed in place")
	r, err := n.get("site")
	if err != nil {
		t.Fatal(err)
	}
	if c := cstatus(r, "server"); c.GetRestartCount() != 0 || c.GetState().GetRunning() == nil {
		t.Errorf("the server after the ConfigMap change: %v", c)
	}
}
