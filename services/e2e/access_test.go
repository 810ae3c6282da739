package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServicesOverMutualTLS runs the planner, executor and PLEG on TCP
// with the certificates syncpodctl certs makes: the planner reaches its
// peers with its own certificate (version asks them, a pod starts through
// the executor), an admin applies, a viewer reads but may not delete, and
// each write is in the audit trail of the service it reached with its
// caller's identity.
func TestServicesOverMutualTLS(t *testing.T) {
	pki := filepath.Join(t.TempDir(), "pki")
	ctlBin := binary(t, "syncpodctl")
	if out, err := exec.Command(ctlBin, "certs", "--dir", pki).CombinedOutput(); err != nil {
		t.Fatalf("syncpodctl certs: %v\n%s", err, out)
	}
	tlsArgs := []string{
		"--listen=127.0.0.1:0",
		"--tls-cert-file=" + filepath.Join(pki, "node.crt"),
		"--tls-private-key-file=" + filepath.Join(pki, "node.key"),
		"--client-ca-file=" + filepath.Join(pki, "ca.crt"),
	}
	sock := filepath.Join(shortTempDir(t), "cri.sock")
	start(t, "syncpod-crisim", "--mode=simulated", "--listen=unix://"+sock)
	cri := "--cri-endpoint=unix://" + sock
	executor := start(t, "syncpod-executor", append(tlsArgs, cri, "--log-dir="+filepath.Join(t.TempDir(), "logs"))...)
	pleg := start(t, "syncpod-pleg", append(tlsArgs, cri)...)
	planner := start(t, "syncpod-planner", append(tlsArgs, "--executor="+executor.grpc, "--pleg="+pleg.grpc, "--resync-period=2s")...)

	pod := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(pod, []byte("name: web\nspec:\n  containers:\n  - {name: app, image: busybox}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctl := func(args ...string) (string, error) {
		all := append([]string{"--config=" + filepath.Join(pki, "config.yaml"), "--server=" + planner.grpc, "--executor=" + executor.grpc, "--pleg=" + pleg.grpc}, args...)
		out, err := exec.Command(ctlBin, all...).CombinedOutput()
		return string(out), err
	}
	for _, tc := range []struct {
		name string
		args []string
		ok   bool
		want string
	}{
		{name: "version asks the peers over mutual TLS", args: []string{"version"}, ok: true, want: "Executor Version"},
		{name: "admin applies", args: []string{"apply", "-f", pod}, ok: true, want: "pod/web created"},
		{name: "the pod starts through the executor", args: []string{"wait", "--for=condition=Ready", "pod/web", "--timeout=60s"}, ok: true},
		{name: "viewer lists", args: []string{"--context=viewer", "get", "pods"}, ok: true, want: "web"},
		{name: "viewer may not delete", args: []string{"--context=viewer", "delete", "pod", "web"}, want: "CN=viewer,O=syncpod:viewers may not write"},
		{name: "editor may not exec", args: []string{"--context=editor", "exec", "web", "--", "true"}, want: "CN=editor,O=syncpod:editors may not exec"},
		{name: "viewer may not reset a back-off at the executor", args: []string{"--context=viewer", "backoffs", "reset", "web"}, want: "may not write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ctl(tc.args...)
			if tc.ok != (err == nil) || !strings.Contains(out, tc.want) {
				t.Fatalf("syncpodctl %v: %v, want ok=%v and %q in:\n%s", tc.args, err, tc.ok, tc.want, out)
			}
		})
	}
	for _, c := range []struct {
		p    *proc
		want []string // on one line
	}{
		{planner, []string{`"msg":"audit"`, `"identity":"CN=admin,O=syncpod:admins"`, `"verb":"write"`, `"method":"/syncpod.planner.v1.PlannerService/ApplyPod"`}},
		{executor, []string{`"msg":"audit"`, `"identity":"CN=syncpod-node,O=syncpod:nodes"`, `"verb":"write"`, `"method":"/syncpod.executor.v1.ExecutorService/ApplyActions"`}},
	} {
		found := false
		for line := range strings.SplitSeq(c.p.output(), "\n") {
			all := true
			for _, w := range c.want {
				all = all && strings.Contains(line, w)
			}
			found = found || all
		}
		if !found {
			t.Errorf("%s's log has no line with %v", c.p.name, c.want)
		}
	}
}
