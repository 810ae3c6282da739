package bench

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPIServer serves the few calls of the API-server path: a pod watch
// (by name) that shows each created pod Pending, then Running; create;
// get; delete, after which the pod is gone. failWatch answers every
// watch with an ERROR event instead.
type fakeAPIServer struct {
	mu        sync.Mutex
	pods      map[string]bool
	created   map[string]chan struct{}
	failWatch bool
	watchRVs  []string
	// order is every created pod's node, in order.
	order []string
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const base = "/api/v1/namespaces/default/pods"
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, "no token", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == base && r.URL.Query().Get("watch") == "1":
		name := strings.TrimPrefix(r.URL.Query().Get("fieldSelector"), "metadata.name=")
		f.watchRVs = append(f.watchRVs, r.URL.Query().Get("resourceVersion"))
		ch := make(chan struct{})
		f.created[name] = ch
		fail := f.failWatch
		f.mu.Unlock()
		defer f.mu.Lock()
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		if fail {
			fmt.Fprint(w, `{"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"Too large resource version"}}`+"\n")
			return
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
		for _, phase := range []string{"Pending", "Running"} {
			fmt.Fprintf(w, `{"type":"MODIFIED","object":{"metadata":{"name":%q},"status":{"phase":%q}}}`+"\n", name, phase)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	case r.Method == http.MethodPost && r.URL.Path == base:
		name, node, ok := readBoundPod(w, r)
		if !ok {
			return
		}
		f.pods[name] = true
		f.order = append(f.order, node)
		if ch, ok := f.created[name]; ok {
			close(ch)
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "{}")
	case strings.HasPrefix(r.URL.Path, base+"/"):
		name := strings.TrimPrefix(r.URL.Path, base+"/")
		if !f.pods[name] {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodDelete {
			delete(f.pods, name)
		}
		_, _ = io.WriteString(w, "{}")
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
	}
}

// TestMeasureAPIToRunning: each round creates a pod bound to the node,
// times it until the watch shows it Running, deletes it and waits until
// it is gone; warm-up rounds are not counted; the watch asks the watch
// cache (resourceVersion=0); a watch ERROR fails the round, saying why.
func TestMeasureAPIToRunning(t *testing.T) {
	f := &fakeAPIServer{pods: map[string]bool{}, created: map[string]chan struct{}{}}
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	api := &APIServer{URL: srv.URL, Token: "tok", HTTP: srv.Client()}
	ctx := context.Background()
	all, err := api.MeasureAPIToRunning(ctx, nil, "n1", "busybox", 1, 3, 10*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := all.Running
	if len(s) != 3 || len(all.Node) != 0 || len(all.Runtime) != 0 {
		t.Fatalf("%d samples (node %d, runtime %d), want 3 (1 warm-up not counted), no split without a runtime", len(s), len(all.Node), len(all.Runtime))
	}
	for _, d := range s {
		if d <= 0 {
			t.Errorf("sample %v, want > 0", d)
		}
	}
	f.mu.Lock()
	left, rvs := len(f.pods), strings.Join(f.watchRVs, ",")
	f.mu.Unlock()
	if left != 0 {
		t.Errorf("%d pods left, want every pod deleted", left)
	}
	if rvs != "0,0,0,0" {
		t.Errorf("watch resourceVersions %q, want 0 for each of the 4 rounds", rvs)
	}

	f.mu.Lock()
	f.failWatch = true
	f.mu.Unlock()
	if _, err := api.CreateUntilRunning(ctx, "p-err", "n1", "busybox"); err == nil || !strings.Contains(err.Error(), "Too large resource version") {
		t.Errorf("a watch ERROR event: %v, want the API server's message", err)
	}
}

// TestMeasureAPIAlternating: each round runs one pod on each node, the
// first node first in even rounds and the second in odd ones; the
// warm-up round is not counted, and there is one ratio a counted round.
func TestMeasureAPIAlternating(t *testing.T) {
	f := &fakeAPIServer{pods: map[string]bool{}, created: map[string]chan struct{}{}}
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	api := &APIServer{URL: srv.URL, Token: "tok", HTTP: srv.Client()}
	s, ratios, err := api.MeasureAPIAlternating(t.Context(), [2]APINode{{Name: "k"}, {Name: "s"}}, "busybox", 1, 4, 10*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(s[0].Running) != 4 || len(s[1].Running) != 4 || len(ratios) != 4 {
		t.Fatalf("samples %d and %d, ratios %d, want 4 each", len(s[0].Running), len(s[1].Running), len(ratios))
	}
	for i, r := range ratios {
		if want := s[1].Running[i] / s[0].Running[i]; r != want {
			t.Errorf("ratio %d: %v, want the second's over the first's %v", i, r, want)
		}
	}
	f.mu.Lock()
	order := strings.Join(f.order, "")
	f.mu.Unlock()
	if order != "ksskksskks" {
		t.Errorf("pods created on nodes %q, want the order to alternate round by round (ks sk ks sk ks)", order)
	}
}

// readPEM is the first PEM block of the file at path.
func readPEM(t *testing.T, path string) *pem.Block {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	return blk
}

// readCert is the certificate in the file at path.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(readPEM(t, path).Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// TestWritePKI: the serving certificate verifies against the CA for
// 127.0.0.1, and the service-account key is an RSA key.
func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	if err := WritePKI(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	read := func(name string) *pem.Block { return readPEM(t, filepath.Join(dir, name)) }
	cert := readCert(t, filepath.Join(dir, "apiserver.crt"))
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, filepath.Join(dir, "ca.crt")))
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("apiserver.crt for 127.0.0.1: %v", err)
	}
	if _, err := x509.ParseECPrivateKey(read("apiserver.key").Bytes); err != nil {
		t.Errorf("apiserver.key: %v", err)
	}
	if _, err := x509.ParsePKCS1PrivateKey(read("sa.key").Bytes); err != nil {
		t.Errorf("sa.key: %v", err)
	}
}

// A node's credentials: its client certificate names it in system:nodes
// (what the Node authorizer and NodeRestriction read), its serving
// certificate and the API server's both verify for the node's IP.
func TestWriteClusterPKIIssuesNodeCredentials(t *testing.T) {
	dir := t.TempDir()
	ip := net.ParseIP("10.99.0.1")
	if err := WriteClusterPKI(dir, time.Now(), &NodePKI{Name: "conformance", IP: ip}); err != nil {
		t.Fatal(err)
	}
	cert := func(name string) *x509.Certificate { return readCert(t, filepath.Join(dir, name)) }
	pool := x509.NewCertPool()
	pool.AddCert(cert("ca.crt"))
	n := cert("node.crt")
	if n.Subject.CommonName != "system:node:conformance" || len(n.Subject.Organization) != 1 || n.Subject.Organization[0] != "system:nodes" {
		t.Errorf("node.crt subject %v, want CN system:node:conformance, O system:nodes", n.Subject)
	}
	if _, err := n.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("node.crt as a client: %v", err)
	}
	for _, name := range []string{"kubelet.crt", "apiserver.crt"} {
		if _, err := cert(name).Verify(x509.VerifyOptions{Roots: pool, DNSName: ip.String()}); err != nil {
			t.Errorf("%s for %s: %v", name, ip, err)
		}
	}
	if _, err := cert("apiserver-kubelet-client.crt").Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("apiserver-kubelet-client.crt as a client: %v", err)
	}
}

// readBoundPod reads the pod a fake API server is asked to create: its
// name and node, or a 400 answered when it is not bound to a node.
func readBoundPod(w http.ResponseWriter, r *http.Request) (name, node string, ok bool) {
	var pod struct {
		Metadata struct{ Name string } `json:"metadata"`
		Spec     struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
	}
	if err := json.NewDecoder(r.Body).Decode(&pod); err != nil || pod.Spec.NodeName == "" {
		http.Error(w, "bad pod", http.StatusBadRequest)
		return "", "", false
	}
	return pod.Metadata.Name, pod.Spec.NodeName, true
}
