package ctl

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/planner/plannertest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/server"
)

// TestCertsAndContexts: syncpodctl certs makes a PKI a planner serves
// mutual TLS with; the viewer context lists pods but gets
// PermissionDenied, naming it and the verb, for apply and exec; the
// admin context may apply; without a certificate nothing is served.
func TestCertsAndContexts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	run := func(t *testing.T, args ...string) (code int, stdout, stderr string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code = Run(context.Background(), args, Env{
			Stdout: &out, Stderr: &errOut, Stdin: strings.NewReader(""),
			Getenv: func(string) string { return "" },
		})
		return code, out.String(), errOut.String()
	}
	if code, _, stderr := run(t, "certs", "--dir", dir, "--hosts", "node1.example"); code != 0 {
		t.Fatalf("certs: exit %d: %s", code, stderr)
	}
	for name, mode := range map[string]os.FileMode{"ca.crt": 0o644, "ca.key": 0o600, "node.crt": 0o644, "node.key": 0o600, "viewer.key": 0o600, "config.yaml": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}

	fake := &plannertest.Planner{}
	fake.PutPod(record("web", nil, []*syncpodv1.ContainerStatus{running("app", true, 0)}, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	s, err := server.New(server.Options{
		Listen:   "127.0.0.1:0",
		TLS:      server.TLSFiles{CertFile: filepath.Join(dir, "node.crt"), KeyFile: filepath.Join(dir, "node.key"), CAFile: filepath.Join(dir, "ca.crt")},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registry: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	plannerv1.RegisterPlannerServiceServer(s.GRPC(), fake)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-errc })
	addr := s.Addr().String()
	cfg := filepath.Join(dir, "config.yaml")
	otherDir := filepath.Join(t.TempDir(), "other")
	if code, _, stderr := run(t, "certs", "--dir", otherDir); code != 0 {
		t.Fatalf("certs: exit %d: %s", code, stderr)
	}
	otherCfg := filepath.Join(otherDir, "config.yaml")

	pod := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(pod, []byte("name: web\nspec:\n  containers:\n  - {name: app, image: busybox}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{name: "viewer lists", args: []string{"--context", "viewer", "get", "pods"}, code: 0},
		{name: "viewer may not apply", args: []string{"--context", "viewer", "apply", "-f", pod}, code: 1,
			stderr: []string{"PermissionDenied", "CN=viewer,O=syncpod:viewers may not write", "ApplyPod"}},
		{name: "viewer may not exec", args: []string{"--context", "viewer", "exec", "web", "-c", "app", "--", "true"}, code: 1,
			stderr: []string{"PermissionDenied", "CN=viewer,O=syncpod:viewers may not exec"}},
		{name: "admin applies", args: []string{"apply", "-f", pod}, code: 0},
		{name: "a certificate of another CA is refused", args: []string{"--config", otherCfg, "get", "pods"}, code: 1,
			stderr: []string{"cannot reach the server"}},
		{name: "plaintext is refused", args: []string{"--config", "/dev/null", "--insecure-tcp", "get", "pods"}, code: 1},
		{name: "a TCP address without TLS nor --insecure-tcp is a usage error", args: []string{"--config", "/dev/null", "get", "pods"}, code: 2,
			stderr: []string{"--insecure-tcp"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--config", cfg, "--server", addr, "--request-timeout", "10s"}, tc.args...)
			// A later --config wins.
			code, _, stderr := run(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q does not say %q", stderr, want)
				}
			}
		})
	}
}

// TestConfigPrecedence: the command line wins over SYNCPOD_* variables,
// which win over the config file's context; a context's relative paths
// are the config file's; a context or a named file that is not there is
// a usage error.
func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(`current-context: a
contexts:
- name: a
  server: ctx-planner:1
  executor: ctx-executor:2
  certificate-authority: ca.crt
  client-certificate: /abs/me.crt
  client-key: me.key
- name: b
  server: b-planner:1
  insecure-tcp: true
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		server   string
		executor string
		ca, cert string
		insecure bool
		code     int
	}{
		{name: "the current context", args: []string{"--config", cfg}, server: "ctx-planner:1", executor: "ctx-executor:2",
			ca: filepath.Join(dir, "ca.crt"), cert: "/abs/me.crt"},
		{name: "the environment wins over the context", args: []string{"--config", cfg}, env: map[string]string{"SYNCPOD_SERVER": "env-planner:1"},
			server: "env-planner:1", executor: "ctx-executor:2", ca: filepath.Join(dir, "ca.crt"), cert: "/abs/me.crt"},
		{name: "the command line wins over both", args: []string{"--config", cfg, "--server", "cli:1"}, env: map[string]string{"SYNCPOD_SERVER": "env-planner:1"},
			server: "cli:1", executor: "ctx-executor:2", ca: filepath.Join(dir, "ca.crt"), cert: "/abs/me.crt"},
		{name: "another context", args: []string{"--context", "b"}, env: map[string]string{"SYNCPOD_CONFIG": cfg},
			server: "b-planner:1", insecure: true},
		{name: "a missing context", args: []string{"--config", cfg, "--context", "c"}, code: 2},
		{name: "a missing named file", args: []string{"--config", filepath.Join(dir, "none.yaml")}, code: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var errOut bytes.Buffer
			env := Env{
				Stdout: &bytes.Buffer{}, Stderr: &errOut,
				Getenv: func(k string) string { return tc.env[k] },
			}
			g := &globals{env: env}
			root := newRoot(g)
			root.SetArgs(append(tc.args, "version", "--client"))
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&errOut)
			err := root.Execute()
			got := g
			if tc.code != 0 {
				if err == nil {
					t.Fatalf("no error, want a usage error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.server != tc.server || got.executor != tc.executor && tc.executor != "" || got.ca != tc.ca || got.clientCert != tc.cert || got.insecureTCP != tc.insecure {
				t.Errorf("server %q executor %q ca %q cert %q insecure %v; want %q %q %q %q %v",
					got.server, got.executor, got.ca, got.clientCert, got.insecureTCP, tc.server, tc.executor, tc.ca, tc.cert, tc.insecure)
			}
		})
	}
}
