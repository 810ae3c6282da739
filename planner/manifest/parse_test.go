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
    termination_message_path: "/dev/termination-log"
  }
}`), want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(pods[0], want) {
		t.Errorf("pod =\n%v\nwant\n%v", prototext.Format(pods[0]), prototext.Format(want))
	}
	if len(warns) != 0 {
		t.Errorf("warnings = %v, want none", warns)
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
		"spec.containers[0].imagePulPolicy",
		"spec.containers[0].resources.limits.ephemeral-storage",
		"spec.containers[0].securityContext.runAsUsr",
		"spec.containers[0].volumeMounts[0].recursiveReadOnly",
		"spec.securityContext.seLinuxChangePolicy",
		"spec.volumes[0].persistentVolumeClaim",
		"spec.containers[0].readinessProbe.httpGet.port",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("error paths =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A misspelling is unknown, named with the field meant; a real
	// Kubernetes field syncpod does not run is "not supported".
	msgs := map[string]string{}
	for _, is := range pe.Issues {
		msgs[is.Path] = is.Message
	}
	for path, want := range map[string]string{
		"spec.containers[0].imagePulPolicy":           "unknown field; did you mean `imagePullPolicy`?",
		"spec.containers[0].securityContext.runAsUsr": "unknown field; did you mean `runAsUser`?",
		"spec.securityContext.seLinuxChangePolicy":    "not supported by syncpod",
	} {
		if msgs[path] != want {
			t.Errorf("%s: %q, want %q", path, msgs[path], want)
		}
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
	for _, name := range []string{"full.yaml", "two.yaml", "pod.json", "unsupported.yaml", "security.yaml", "volumes.yaml"} {
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

// TestParseSecurityLifecycleAndCommonSpec: the security context, hooks and
// common spec fields of the documentation's examples all reach the pod.
func TestParseSecurityLifecycleAndCommonSpec(t *testing.T) {
	pods, warns, err := Parse(readTestdata(t, "security.yaml"))
	if err != nil || len(warns) != 0 || len(pods) != 1 {
		t.Fatalf("Parse = %d pods, warnings %v, err %v", len(pods), warns, err)
	}
	want := &syncpodv1.Pod{}
	if err := prototext.Unmarshal([]byte(`
name: "security-context-demo"
spec {
  containers {
    name: "sec-ctx-demo" image: "busybox:1.36" command: ["sh", "-c", "sleep 1h"]
    security_context {
      read_only_root_filesystem: true privileged: false allow_privilege_escalation: false
      capabilities {add: ["NET_ADMIN", "SYS_TIME"] drop: ["ALL"]}
      seccomp_profile {type: SECCOMP_PROFILE_TYPE_LOCALHOST localhost_profile: "profiles/audit.json"}
    }
    lifecycle {
      post_start {exec {command: ["/bin/sh", "-c", "echo Hello from the postStart handler > /usr/share/message"]}}
      pre_stop {http_get {path: "/shutdown" port: 8080 host: "127.0.0.1"}}
    }
    termination_message_policy: TERMINATION_MESSAGE_POLICY_FALLBACK_TO_LOGS_ON_ERROR
    stdin: true tty: true
  }
  containers {
    name: "sleeper" image: "busybox:1.36"
    lifecycle {pre_stop {sleep {seconds: 5}} post_start {tcp_socket {port: 8080}}}
  }
  security_context {
    run_as_user: 1000 run_as_group: 3000 run_as_non_root: true supplemental_groups: [4000] fs_group: 2000
    seccomp_profile {type: SECCOMP_PROFILE_TYPE_RUNTIME_DEFAULT}
    sysctls {name: "kernel.shm_rmid_forced" value: "0"}
  }
  active_deadline_seconds: 600
  host_aliases {ip: "127.0.0.1" hostnames: ["foo.local", "bar.local"]}
  dns_policy: DNS_POLICY_NONE
  dns_config {nameservers: ["192.0.2.1"] searches: ["ns1.svc.cluster-domain.example"]
    options {name: "ndots" value: "2"} options {name: "edns0"}}
  share_process_namespace: true
  runtime_class_name: "runc"
}`), want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(pods[0], want) {
		t.Errorf("pod =\n%v\nwant\n%v", prototext.Format(pods[0]), prototext.Format(want))
	}
}

func TestParseRefusesBadEnumsOfTheSecurityContext(t *testing.T) {
	data := `apiVersion: v1
kind: Pod
metadata: {name: x}
spec:
  dnsPolicy: Sometimes
  securityContext: {seccompProfile: {type: Strict}}
  containers:
  - name: c
    image: i
    terminationMessagePolicy: Always
    lifecycle: {postStart: {}}
`
	_, _, err := Parse([]byte(data))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("Parse = %v", err)
	}
	var got []string
	for _, is := range pe.Issues {
		got = append(got, is.Path)
	}
	want := "spec.dnsPolicy,spec.securityContext.seccompProfile.type,spec.containers[0].lifecycle.postStart,spec.containers[0].terminationMessagePolicy"
	if strings.Join(got, ",") != want {
		t.Errorf("paths %v, want %s", got, want)
	}
}

// Stdin, stdinOnce and tty are taken (attach needs them), not refused as
// unsupported.
func TestParseStdinAndTTY(t *testing.T) {
	data := "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - {name: shell, image: i, stdin: true, stdinOnce: true, tty: true}\n  - {name: plain, image: i}\n"
	pods, warns, err := Parse([]byte(data))
	if err != nil || len(pods) != 1 || len(warns) != 0 {
		t.Fatalf("Parse = %d pods, warnings %v, err %v", len(pods), warns, err)
	}
	shell, plain := pods[0].GetSpec().GetContainers()[0], pods[0].GetSpec().GetContainers()[1]
	if !shell.GetStdin() || !shell.GetStdinOnce() || !shell.GetTty() {
		t.Errorf("shell: stdin %v stdinOnce %v tty %v, want all true", shell.GetStdin(), shell.GetStdinOnce(), shell.GetTty())
	}
	if plain.GetStdin() || plain.GetStdinOnce() || plain.GetTty() {
		t.Errorf("plain container got stdin or tty: %v", plain)
	}
}

// spec.os and spec.overhead (set by RuntimeClass
// admission) are converted, not refused; an overhead resource other than
// cpu and memory is refused with its path.
func TestParseKeepsOSAndOverhead(t *testing.T) {
	data := "apiVersion: v1\nkind: Pod\nmetadata: {name: " + strings.Repeat("p", 200) + "}\nspec:\n" +
		"  os: {name: linux}\n  overhead: {cpu: 10m, memory: 1Mi}\n  containers: [{name: c, image: i}]\n"
	pods, warns, err := Parse([]byte(data))
	if err != nil || len(pods) != 1 || len(warns) != 0 {
		t.Fatalf("Parse = %d pods, warnings %v, err %v; want 1 pod, nothing reported", len(pods), warns, err)
	}
	s := pods[0].GetSpec()
	if s.GetOs().GetName() != "linux" || s.GetOverhead().GetCpu() != "10m" || s.GetOverhead().GetMemory() != "1Mi" {
		t.Errorf("os %v, overhead %v", s.GetOs(), s.GetOverhead())
	}
	if len(pods[0].GetName()) != 200 {
		t.Errorf("name cut to %d characters", len(pods[0].GetName()))
	}
	bad := strings.Replace(data, "memory: 1Mi", "memory: 1Mi, ephemeral-storage: 1Gi", 1)
	_, _, err = Parse([]byte(bad))
	var pe *ParseError
	if !errors.As(err, &pe) || len(pe.Issues) != 1 || pe.Issues[0].Path != "spec.overhead.ephemeral-storage" {
		t.Errorf("Parse with an ephemeral-storage overhead = %v, want it refused with its path", err)
	}
}

// grpc probes are converted with their port, service and mode; an
// unknown mode is refused with its path.
func TestParseGRPCProbes(t *testing.T) {
	data := `apiVersion: v1
kind: Pod
metadata: {name: x}
spec:
  containers:
  - name: c
    image: i
    livenessProbe: {grpc: {port: 5000}, timeoutSeconds: 5, failureThreshold: 1}
    readinessProbe: {grpc: {port: 5001, service: "ready", mode: Plaintext}}
    startupProbe: {grpc: {port: 5002, service: "", mode: TLS}}
`
	pods, warns, err := Parse([]byte(data))
	if err != nil || len(pods) != 1 || len(warns) != 0 {
		t.Fatalf("Parse = %d pods, warnings %v, err %v", len(pods), warns, err)
	}
	c := pods[0].GetSpec().GetContainers()[0]
	for _, tc := range []struct {
		name string
		p    *syncpodv1.Probe
		want *syncpodv1.GRPCAction
	}{
		{"liveness", c.GetLivenessProbe(), &syncpodv1.GRPCAction{Port: 5000}},
		{"readiness", c.GetReadinessProbe(), &syncpodv1.GRPCAction{Port: 5001, Service: "ready"}},
		{"startup", c.GetStartupProbe(), &syncpodv1.GRPCAction{Port: 5002, Tls: true}},
	} {
		if !proto.Equal(tc.p.GetGrpc(), tc.want) {
			t.Errorf("%s probe: grpc %v, want %v", tc.name, tc.p.GetGrpc(), tc.want)
		}
	}
	if got := c.GetLivenessProbe(); got.GetTimeoutSeconds() != 5 || got.GetFailureThreshold() != 1 {
		t.Errorf("liveness timing lost: %v", got)
	}
	_, _, err = Parse([]byte(strings.Replace(data, "mode: TLS", "mode: Quic", 1)))
	if err == nil || !strings.Contains(err.Error(), "spec.containers[0].startupProbe.grpc.mode") {
		t.Errorf("unknown mode: err %v, want it refused with its path", err)
	}
}

// TestParseEphemeralContainers: spec.ephemeralContainers convert as
// containers with their target; a field Kubernetes has but syncpod does
// not is refused under its ephemeral path.
func TestParseEphemeralContainers(t *testing.T) {
	pods, _, err := Parse([]byte(`
apiVersion: v1
kind: Pod
metadata: {name: demo}
spec:
  containers:
  - {name: app, image: busybox:1.36}
  ephemeralContainers:
  - name: debugger
    image: busybox:1.36
    command: [sh]
    stdin: true
    tty: true
    targetContainerName: app
    terminationMessagePolicy: File
    imagePullPolicy: IfNotPresent
    securityContext: {runAsUser: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &syncpodv1.Pod{}
	if err := prototext.Unmarshal([]byte(`
name: "demo"
spec {
  containers {name: "app" image: "busybox:1.36"}
  ephemeral_containers {name: "debugger" image: "busybox:1.36" command: ["sh"] stdin: true tty: true
    target_container_name: "app" termination_message_policy: TERMINATION_MESSAGE_POLICY_FILE
    image_pull_policy: IMAGE_PULL_POLICY_IF_NOT_PRESENT security_context {run_as_user: 0}}
}`), want); err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || !proto.Equal(pods[0], want) {
		t.Fatalf("pods = %v\nwant %v", pods, prototext.Format(want))
	}
	_, _, err = Parse([]byte(`
apiVersion: v1
kind: Pod
metadata: {name: demo}
spec:
  containers:
  - {name: app, image: busybox:1.36}
  ephemeralContainers:
  - {name: debugger, image: busybox:1.36, volumeDevices: [{name: d, devicePath: /dev/x}]}
`))
	if err == nil || !strings.Contains(err.Error(), "spec.ephemeralContainers[0].volumeDevices: not supported by syncpod") {
		t.Errorf("err = %v", err)
	}
}

// TestParseKeepsHostUsers: hostUsers is carried as set: false asks
// for a user namespace, true for the node's, absent leaves it unset: false
// is not taken for an empty value.
func TestParseKeepsHostUsers(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       *bool
	}{
		{"absent", "", nil},
		{"false", "  hostUsers: false\n", new(false)},
		{"true", "  hostUsers: true\n", new(true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + tc.line + "  containers: [{name: c, image: i}]\n"
			pods, warns, err := Parse([]byte(data))
			if err != nil || len(pods) != 1 || len(warns) != 0 {
				t.Fatalf("Parse = %d pods, warnings %v, err %v", len(pods), warns, err)
			}
			got := pods[0].GetSpec().HostUsers
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("host_users %v, want %v", got, tc.want)
			}
		})
	}
}
