package ctl

import (
	"bytes"
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/syncpod/syncpod/node/kubeconv"
	"github.com/syncpod/syncpod/planner/service"
	"github.com/syncpod/syncpod/planner/store"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// configHarness runs syncpodctl against the real planner service and
// store (config objects and pods), over bufconn.
func configHarness(t *testing.T) (run func(stdin string, args ...string) (int, string, string)) {
	t.Helper()
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "p.db"), Validate: validation.Pod,
		Now: func() time.Time { return now.Add(-time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	l := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	plannerv1.RegisterPlannerServiceServer(s, service.New(service.Options{Pods: st, Config: st}))
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return func(stdin string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		env := Env{
			Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
			Getenv: func(string) string { return "" }, Now: func() time.Time { return now },
			ConvertKubernetes: kubeconv.ConvertManifest,
			Dial: func(string) (grpc.ClientConnInterface, io.Closer, error) {
				conn, err := grpc.NewClient("passthrough:///planner",
					grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return l.DialContext(ctx) }),
					grpc.WithTransportCredentials(insecure.NewCredentials()))
				return conn, conn, err
			},
		}
		code := Run(context.Background(), append([]string{"--server=planner"}, args...), env)
		return code, out.String(), errOut.String()
	}
}

const siteManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: site-config}
data: {site.conf: "greeting=hi", other: x}
---
apiVersion: v1
kind: Secret
metadata: {name: site-creds}
stringData: {admin-password: very-secret-value}
---
apiVersion: v1
kind: Pod
metadata: {name: site}
spec:
  volumes: [{name: config, configMap: {name: site-config}}]
  containers:
  - name: server
    image: busybox:1.36
    command: [sleep, "60"]
    volumeMounts: [{name: config, mountPath: /etc/site}]
    env:
    - name: PW
      valueFrom: {secretKeyRef: {name: site-creds, key: admin-password}}
`

func TestApplyGetDeleteConfigMapsAndSecrets(t *testing.T) {
	run := configHarness(t)
	code, out, errOut := run(siteManifest, "apply", "-f", "-")
	if code != 0 || out != "configmap/site-config created\nsecret/site-creds created\npod/site created\n" {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if _, out, _ := run(siteManifest, "apply", "-f", "-"); !strings.Contains(out, "configmap/site-config unchanged\nsecret/site-creds unchanged") {
		t.Errorf("re-apply: %s", out)
	}
	code, out, _ = run("", "get", "configmaps")
	if code != 0 || out != "NAME          DATA   AGE\nsite-config   2      60s\n" {
		t.Errorf("get configmaps: exit %d\n%q", code, out)
	}
	code, out, _ = run("", "get", "secrets", "-A")
	if code != 0 || out != "NAMESPACE   NAME         TYPE     DATA   AGE\ndefault     site-creds   Opaque   1      60s\n" {
		t.Errorf("get secrets -A: exit %d\n%q", code, out)
	}
	for _, args := range [][]string{{"get", "secret", "site-creds"}, {"get", "secrets/site-creds"}, {"get", "secrets", "-o", "wide"}} {
		if _, out, errOut := run("", args...); strings.Contains(out+errOut, "very-secret-value") {
			t.Fatalf("%v printed a secret value", args)
		}
	}
	if code, _, errOut := run("", "get", "cm", "nope"); code != 3 || !strings.Contains(errOut, `configmaps "nope" not found`) {
		t.Errorf("get missing configmap: exit %d %s", code, errOut)
	}
	if code, out, _ := run("", "delete", "configmap/site-config"); code != 0 || out != "configmap \"site-config\" deleted\n" {
		t.Errorf("delete configmap: exit %d %q", code, out)
	}
	if code, _, _ := run("", "delete", "secret", "site-creds", "nope"); code != 3 {
		t.Errorf("delete with a missing secret: exit %d, want 3", code)
	}
	if _, out, errOut := run("", "get", "configmaps"); out != "" || !strings.Contains(errOut, "No resources found in default namespace.") {
		t.Errorf("get after delete: %q %q", out, errOut)
	}
	// A bad ConfigMap document is refused with its path, nothing applied.
	code, _, errOut = run("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {k: v}\nbinaryDat: {}\n", "apply", "-f", "-")
	if code != 2 || !strings.Contains(errOut, "binaryDat: unknown field; did you mean `binaryData`?") {
		t.Errorf("bad configmap: exit %d %s", code, errOut)
	}
}

func TestConfigArgs(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		kind  string
		names string
		ok    bool
	}{
		{[]string{"configmaps"}, "configmap", "", true},
		{[]string{"cm", "a", "b"}, "configmap", "a,b", true},
		{[]string{"secret/a", "secrets/b"}, "secret", "a,b", true},
		{[]string{"secret/a", "configmap/b"}, "", "", false},
		{[]string{"pods"}, "", "", false},
		{[]string{"pod/a"}, "", "", false},
		{nil, "", "", false},
	} {
		kind, names, ok := configArgs(tc.args)
		if kind != tc.kind || strings.Join(names, ",") != tc.names || ok != tc.ok {
			t.Errorf("configArgs(%q) = %q %q %v", tc.args, kind, names, ok)
		}
	}
}
