package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseFullPod(t *testing.T) {
	pods, warns, err := Parse(readTestdata(t, "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		t.Fatalf("got %d pods", len(pods))
	}
	want := &syncpodv1.Pod{}
	if err := prototext.Unmarshal([]byte(`
uid: "6f1c1d2e-0000-4000-8000-000000000001" name: "demo" namespace: "apps"
labels {key: "app" value: "demo"} annotations {key: "note" value: "hello"}
spec {
  restart_policy: RESTART_POLICY_ON_FAILURE termination_grace_period_seconds: 5
  host_network: true hostname: "demo-host"
  init_containers {name: "setup" image: "busybox:1.36" command: ["sh", "-c", "echo init"]}
  init_containers {name: "proxy" image: "envoy:1" restart_policy: CONTAINER_RESTART_POLICY_ALWAYS
    readiness_probe {tcp_socket {port: 9901}}}
  containers {
    name: "web" image: "nginx:1.27" args: ["-g", "daemon off;"] working_dir: "/srv"
    env {name: "MODE" value: "prod"} env {name: "EMPTY"}
    image_pull_policy: IMAGE_PULL_POLICY_IF_NOT_PRESENT
    restart_policy: CONTAINER_RESTART_POLICY_NEVER
    restart_policy_rules {action: CONTAINER_RESTART_RULE_ACTION_RESTART exit_codes {operator: EXIT_CODE_OPERATOR_IN values: [42, 43]}}
    ports {name: "http" container_port: 8080 host_port: 8080 protocol: PROTOCOL_TCP}
    resources {requests {cpu: "250m" memory: "64Mi"} limits {cpu: "1" memory: "128Mi"}}
    liveness_probe {http_get {path: "/healthz" port: 8080 http_headers {name: "X-Probe" value: "1"}}
      initial_delay_seconds: 3 period_seconds: 5 failure_threshold: 2 termination_grace_period_seconds: 7}
    startup_probe {exec {command: ["true"]}}
  }
}`), want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(pods[0], want) {
		t.Errorf("pod =\n%v\nwant\n%v", prototext.Format(pods[0]), prototext.Format(want))
	}
	if len(warns) != 1 || warns[0].Path != "spec.containers[0].terminationMessagePath" || warns[0].Severity != Warning {
		t.Errorf("warnings = %v, want one for terminationMessagePath", warns)
	}
}

func TestParseDocuments(t *testing.T) {
	cases := []struct {
		name      string
		file      string
		data      string
		wantNames []string
		wantErr   []string // substrings of the error, in order
	}{
		{name: "several YAML documents", file: "two.yaml", wantNames: []string{"one", "two"}},
		{name: "JSON", file: "pod.json", wantNames: []string{"json-pod"}},
		{name: "empty file", data: "", wantNames: nil},
		{name: "only comments", data: "# nothing\n---\n# here\n", wantNames: nil},
		{name: "not a pod", data: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n",
			wantErr: []string{`apiVersion: must be "v1"`, `kind: must be "Pod"`}},
		{name: "not an object", data: "- a\n- b\n", wantErr: []string{"must be an object"}},
		{name: "broken YAML", data: "apiVersion: v1\nkind: [Pod\n", wantErr: []string{"not YAML or JSON"}},
		{name: "wrong type", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {hostNetwork: yes-please}\n",
			wantErr: []string{"spec.hostNetwork: cannot be"}},
		{name: "missing name", data: "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n",
			wantErr: []string{"metadata.name: required"}},
		{name: "bad enums", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  restartPolicy: Sometimes\n  containers: [{name: c, image: i, imagePullPolicy: Maybe}]\n",
			wantErr: []string{"spec.restartPolicy: must be", "spec.containers[0].imagePullPolicy: must be"}},
		{name: "one bad document refuses the file", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {volumes: [{name: v, nfs: {server: s, path: /}}]}\n",
			wantErr: []string{"document 1: spec.volumes[0].nfs: not supported"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			if tc.file != "" {
				data = readTestdata(t, tc.file)
			}
			pods, _, err := Parse(data)
			if len(tc.wantErr) > 0 {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Parse error = %v, want ErrInvalid", err)
				}
				if pods != nil {
					t.Errorf("pods returned with an error: %v", pods)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range pods {
				names = append(names, p.GetName())
			}
			if strings.Join(names, ",") != strings.Join(tc.wantNames, ",") {
				t.Errorf("pods = %v, want %v", names, tc.wantNames)
			}
		})
	}
}

func TestParseReportsEveryUnsupportedFieldWithItsPath(t *testing.T) {
	_, warns, err := Parse(readTestdata(t, "unsupported.yaml"))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("Parse = %v, want *ParseError", err)
	}
	var got []string
	for _, is := range pe.Issues {
		got = append(got, is.Path)
	}
	want := []string{ // walk order (keys sorted), then conversion errors
		"spec.containers[0].env[0].valueFrom.fileKeyRef",
		"spec.containers[0].imagePulPolicy",
		"spec.containers[0].lifecycle",
		"spec.containers[0].resources.limits.ephemeral-storage",
		"spec.containers[0].volumeMounts[0].subPathExpr",
		"spec.securityContext",
		"spec.volumes[0].persistentVolumeClaim",
		"spec.containers[0].readinessProbe.httpGet.port",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("error paths =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(warns) != 1 || warns[0].Path != "spec.nodeSelector" {
		t.Errorf("warnings = %v, want spec.nodeSelector", warns)
	}
}

func TestParseIgnoresEmptyUnsupportedFields(t *testing.T) {
	data := "apiVersion: v1\nkind: Pod\nmetadata: {name: x, creationTimestamp: null}\nspec:\n  securityContext: {}\n  hostPID: false\n  volumes: []\n  containers: [{name: c, image: i, resources: {}}]\nstatus: {}\n"
	pods, warns, err := Parse([]byte(data))
	if err != nil || len(pods) != 1 || len(warns) != 0 {
		t.Errorf("Parse = %d pods, warnings %v, err %v; want 1 pod, nothing reported", len(pods), warns, err)
	}
}

func TestParseRejectsHugeFiles(t *testing.T) {
	if _, _, err := Parse(make([]byte, MaxSize+1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("Parse(huge) = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"full.yaml", "two.yaml", "pod.json", "unsupported.yaml", "volumes.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("---\n---\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i","livenessProbe":{"tcpSocket":{"port":"p"}}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, warns, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error not classified: %v", err)
			}
			if pods != nil {
				t.Fatal("pods returned with an error")
			}
			return
		}
		for _, w := range warns {
			if w.Severity != Warning || w.Path == "" {
				t.Fatalf("bad warning %+v", w)
			}
		}
		// Deterministic.
		again, _, _ := Parse(data)
		if len(again) != len(pods) {
			t.Fatal("not deterministic")
		}
		for i := range pods {
			if !proto.Equal(pods[i], again[i]) {
				t.Fatal("not deterministic")
			}
		}
	})
}
