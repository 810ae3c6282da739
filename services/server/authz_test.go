package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/internal/proctest"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestMethodVerbsCoverEveryService: every method of every service a
// syncpod binary serves has a verb class, so none is refused to every
// certificate by omission (or granted by a default).
func TestMethodVerbsCoverEveryService(t *testing.T) {
	for _, sd := range []grpc.ServiceDesc{
		plannerv1.PlannerService_ServiceDesc,
		executorv1.ExecutorService_ServiceDesc,
		plegv1.PlegService_ServiceDesc,
		syncpodv1.VersionService_ServiceDesc,
		healthpb.Health_ServiceDesc,
		reflectionv1.ServerReflection_ServiceDesc,
		reflectionv1alpha.ServerReflection_ServiceDesc,
	} {
		var names []string
		for _, m := range sd.Methods {
			names = append(names, m.MethodName)
		}
		for _, s := range sd.Streams {
			names = append(names, s.StreamName)
		}
		for _, n := range names {
			full := "/" + sd.ServiceName + "/" + n
			if _, ok := MethodVerbs[full]; !ok {
				t.Errorf("%s has no verb class in MethodVerbs", full)
			}
		}
	}
}

// pki is a CA with the files of a server and its clients in a directory.
type pki struct {
	dir string
	ca  *CA
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	ca, err := NewCA(name, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{dir: t.TempDir(), ca: ca}
	c, _, err := ca.PEM()
	if err != nil {
		t.Fatal(err)
	}
	p.write(t, "ca.crt", c)
	return p
}

func (p *pki) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue writes name.crt and name.key and returns them with the CA.
func (p *pki) issue(t *testing.T, name string, orgs []string, hosts ...string) TLSFiles {
	t.Helper()
	c, k, err := p.ca.Issue(CertRequest{CommonName: name, Organizations: orgs, Hosts: hosts, Validity: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return TLSFiles{CertFile: p.write(t, name+".crt", c), KeyFile: p.write(t, name+".key", k), CAFile: filepath.Join(p.dir, "ca.crt")}
}

// planner answers ListPods and ApplyPod; Exec ends at once.
type planner struct {
	plannerv1.UnimplementedPlannerServiceServer
}

func (planner) ListPods(context.Context, *plannerv1.ListPodsRequest) (*plannerv1.ListPodsResponse, error) {
	return &plannerv1.ListPodsResponse{}, nil
}

func (planner) ApplyPod(context.Context, *plannerv1.ApplyPodRequest) (*plannerv1.ApplyPodResponse, error) {
	return &plannerv1.ApplyPodResponse{}, nil
}

func (planner) Exec(grpc.BidiStreamingServer[plannerv1.ExecRequest, plannerv1.ExecResponse]) error {
	return nil
}

// TestMutualTLSAndRoles: a TCP listener with mutual TLS refuses clients
// without a certificate or with one of another CA; a viewer may list but
// not apply nor exec (PermissionDenied naming it and the verb); an
// admin's mutating and exec calls are in the audit trail.
func TestMutualTLSAndRoles(t *testing.T) {
	node := newPKI(t, "node-ca")
	other := newPKI(t, "other-ca")
	serverFiles := node.issue(t, "planner", []string{GroupNodes}, "127.0.0.1", "localhost")
	var logs proctest.Buffer
	s, err := New(Options{
		Listen:   "127.0.0.1:0",
		TLS:      serverFiles,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Registry: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	plannerv1.RegisterPlannerServiceServer(s.GRPC(), planner{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-errc })
	addr := s.Addr().String()

	client := func(t *testing.T, d DialPolicy) plannerv1.PlannerServiceClient {
		t.Helper()
		conn, err := d.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return plannerv1.NewPlannerServiceClient(conn)
	}
	callCtx := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	exec := func(ctx context.Context, c plannerv1.PlannerServiceClient) error {
		st, err := c.Exec(ctx)
		if err != nil {
			return err
		}
		_, err = st.Recv()
		if err == io.EOF {
			return nil
		}
		return err
	}

	refused := []struct {
		name string
		dial DialPolicy
	}{
		{name: "plaintext client", dial: DialPolicy{InsecureTCP: true}},
		{name: "no client certificate", dial: DialPolicy{TLS: TLSFiles{CAFile: serverFiles.CAFile}}},
		{name: "certificate of another CA", dial: DialPolicy{TLS: other.issue(t, "intruder", []string{GroupAdmins})}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			var c plannerv1.PlannerServiceClient
			if tc.dial.TLS.CertFile == "" && tc.dial.TLS.CAFile != "" {
				// A client that trusts the server but has no certificate.
				cfg, err := clientTLSWithoutCert(serverFiles.CAFile)
				if err != nil {
					t.Fatal(err)
				}
				conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(cfg))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.Close() })
				c = plannerv1.NewPlannerServiceClient(conn)
			} else {
				c = client(t, tc.dial)
			}
			_, err := c.ListPods(callCtx(t), &plannerv1.ListPodsRequest{})
			if err == nil {
				t.Fatal("ListPods succeeded")
			}
			if code := status.Code(err); code != codes.Unavailable {
				t.Errorf("ListPods = %v, want Unavailable (the handshake refused)", err)
			}
		})
	}

	viewer := client(t, DialPolicy{TLS: node.issue(t, "alice", []string{GroupViewers})})
	admin := client(t, DialPolicy{TLS: node.issue(t, "root-admin", []string{GroupAdmins})})
	calls := []struct {
		name    string
		client  plannerv1.PlannerServiceClient
		call    func(ctx context.Context, c plannerv1.PlannerServiceClient) error
		code    codes.Code
		message []string
	}{
		{name: "viewer lists", client: viewer, call: func(ctx context.Context, c plannerv1.PlannerServiceClient) error {
			_, err := c.ListPods(ctx, &plannerv1.ListPodsRequest{})
			return err
		}, code: codes.OK},
		{name: "viewer may not apply", client: viewer, call: func(ctx context.Context, c plannerv1.PlannerServiceClient) error {
			_, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{})
			return err
		}, code: codes.PermissionDenied, message: []string{"CN=alice,O=syncpod:viewers", "may not write", "ApplyPod"}},
		{name: "viewer may not exec", client: viewer, call: exec, code: codes.PermissionDenied, message: []string{"CN=alice", "may not exec", "Exec"}},
		{name: "admin applies", client: admin, call: func(ctx context.Context, c plannerv1.PlannerServiceClient) error {
			_, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{})
			return err
		}, code: codes.OK},
		{name: "admin execs", client: admin, call: exec, code: codes.OK},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(callCtx(t), tc.client)
			if status.Code(err) != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			for _, m := range tc.message {
				if !strings.Contains(status.Convert(err).Message(), m) {
					t.Errorf("message %q does not say %q", status.Convert(err).Message(), m)
				}
			}
		})
	}
	// The audit trail: the admin's write and exec, at info, with its
	// identity; the viewer's list is not in it.
	log := logs.String()
	for _, want := range []string{
		`level=INFO msg=audit identity="CN=root-admin,O=syncpod:admins" verb=write method=/syncpod.planner.v1.PlannerService/ApplyPod`,
		`level=INFO msg=audit identity="CN=root-admin,O=syncpod:admins" verb=exec method=/syncpod.planner.v1.PlannerService/Exec`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, "msg=audit") && strings.Contains(line, "ListPods") {
			t.Errorf("a read is in the audit trail: %s", line)
		}
	}
}

func TestPolicyAllows(t *testing.T) {
	tests := []struct {
		name string
		id   Identity
		verb Verb
		want bool
	}{
		{name: "local peer may exec", id: Identity{Local: true}, verb: VerbExec, want: true},
		{name: "viewer reads", id: Identity{CommonName: "a", Organizations: []string{GroupViewers}}, verb: VerbRead, want: true},
		{name: "viewer may not write", id: Identity{CommonName: "a", Organizations: []string{GroupViewers}}, verb: VerbWrite},
		{name: "editor writes", id: Identity{CommonName: "a", Organizations: []string{GroupEditors}}, verb: VerbWrite, want: true},
		{name: "editor may not exec", id: Identity{CommonName: "a", Organizations: []string{GroupEditors}}, verb: VerbExec},
		{name: "a node may exec", id: Identity{CommonName: "planner", Organizations: []string{GroupNodes}}, verb: VerbExec, want: true},
		{name: "anyone verified asks health", id: Identity{CommonName: "x"}, verb: VerbHealth, want: true},
		{name: "nobody calls an unclassified method", id: Identity{CommonName: "x", Organizations: []string{GroupAdmins}}, verb: ""},
		{name: "a CommonName may be granted", id: Identity{CommonName: GroupAdmins}, verb: VerbExec, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DefaultPolicy.Allows(tc.id, tc.verb); got != tc.want {
				t.Errorf("Allows(%v, %q) = %v, want %v", tc.id, tc.verb, got, tc.want)
			}
		})
	}
}

func TestValidateListenSecurity(t *testing.T) {
	base := func() *Flags {
		return &Flags{LogLevel: "info", LogFormat: "text", ShutdownTimeout: time.Second}
	}
	tests := []struct {
		name string
		edit func(f *Flags)
		want string // "" means valid
	}{
		{name: "unix socket needs nothing", edit: func(f *Flags) { f.Listen = "unix:///run/x.sock" }},
		{name: "plain TCP is refused", edit: func(f *Flags) { f.Listen = "127.0.0.1:7001" }, want: "--insecure-tcp"},
		{name: "plain TCP when asked for", edit: func(f *Flags) { f.Listen = "127.0.0.1:7001"; f.InsecureTCP = true }},
		{name: "mutual TLS", edit: func(f *Flags) {
			f.Listen = "0.0.0.0:7001"
			f.TLS = TLSFiles{CertFile: "c", KeyFile: "k", CAFile: "ca"}
		}},
		{name: "TLS without a client CA", edit: func(f *Flags) {
			f.Listen = "0.0.0.0:7001"
			f.TLS = TLSFiles{CertFile: "c", KeyFile: "k"}
		}, want: "--client-ca-file: required"},
		{name: "metrics TLS without a certificate", edit: func(f *Flags) { f.Listen = "unix:///x.sock"; f.MetricsTLS = true }, want: "--metrics-tls"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			tc.edit(f)
			err := f.Validate()
			if tc.want == "" && err != nil {
				t.Fatalf("Validate = %v, want nil", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// clientTLSWithoutCert trusts the CA in caFile and presents no
// certificate.
func clientTLSWithoutCert(caFile string) (credentials.TransportCredentials, error) {
	pemCA, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}), nil
}

// TestMetricsTLS: --metrics-tls serves /metrics over TLS with the serving
// certificate, and asks no client certificate (Prometheus scrapes it).
func TestMetricsTLS(t *testing.T) {
	node := newPKI(t, "node-ca")
	files := node.issue(t, "planner", []string{GroupNodes}, "127.0.0.1")
	r := runServer(t, Options{Listen: "unix://" + filepath.Join(t.TempDir(), "s.sock"), MetricsListen: "127.0.0.1:0", TLS: files, MetricsTLS: true})
	pemCA, err := os.ReadFile(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}}}
	resp, err := client.Get("https://" + r.s.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics over TLS: %s", resp.Status)
	}
	if plain, err := http.Get("http://" + r.s.MetricsAddr().String() + "/metrics"); err == nil {
		plain.Body.Close()
		if plain.StatusCode == http.StatusOK {
			t.Error("plain HTTP served /metrics on a --metrics-tls address")
		}
	}
}

// TestUnixPeerIsAuditedByUID: a caller on the unix socket may call
// everything (the socket's mode let it in), and the audit trail names its
// uid and pid.
func TestUnixPeerIsAuditedByUID(t *testing.T) {
	var logs proctest.Buffer
	sock := filepath.Join(t.TempDir(), "s.sock")
	s, err := New(Options{Listen: "unix://" + sock, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	plannerv1.RegisterPlannerServiceServer(s.GRPC(), planner{})
	runCtx, stop := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-errc })
	conn, err := DialPolicy{}.Dial("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := plannerv1.NewPlannerServiceClient(conn).ApplyPod(ctx, &plannerv1.ApplyPodRequest{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`msg=audit identity="unix:uid=%d,pid=%d" verb=write`, os.Getuid(), os.Getpid())
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs.String())
	}
}
