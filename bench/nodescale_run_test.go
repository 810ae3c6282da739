package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeScaleAPI serves what NodeScale asks of a control plane: the
// default ServiceAccount, Ready nodes, one pod watch by label, creates
// (each pod then shown Pending, then Running with its container running)
// and deletes (each pod then removed). It counts the pods bound to each
// node.
type fakeScaleAPI struct {
	mu      sync.Mutex
	events  chan string
	pods    map[string]bool
	perNode map[string]int
	rv      int
}

func (f *fakeScaleAPI) event(typ, name, phase string, running bool) {
	f.rv++
	cs := ""
	if running {
		cs = `,"containerStatuses":[{"name":"main","state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}]`
	}
	f.events <- fmt.Sprintf(`{"type":%q,"object":{"metadata":{"name":%q,"resourceVersion":"%d"},"spec":{"containers":[{"name":"main"}]},"status":{"phase":%q%s}}}`,
		typ, name, f.rv, phase, cs)
}

func (f *fakeScaleAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const pods = "/api/v1/namespaces/default/pods"
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/namespaces/default/serviceaccounts":
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "{}")
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/nodes/"):
		_, _ = io.WriteString(w, `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)
	case r.Method == http.MethodGet && r.URL.Path == pods && r.URL.Query().Get("watch") == "1":
		if r.URL.Query().Get("labelSelector") != "app="+ScalePodLabel {
			http.Error(w, "want the load pods' label", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case ev := <-f.events:
				_, _ = io.WriteString(w, ev+"\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	case r.Method == http.MethodPost && r.URL.Path == pods:
		name, node, ok := readBoundPod(w, r)
		if !ok {
			return
		}
		f.mu.Lock()
		f.pods[name] = true
		f.perNode[node]++
		f.event("ADDED", name, "Pending", false)
		f.event("MODIFIED", name, "Running", true)
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "{}")
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, pods+"/"):
		name := strings.TrimPrefix(r.URL.Path, pods+"/")
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.pods[name] {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		delete(f.pods, name)
		f.event("DELETED", name, "Running", true)
		_, _ = io.WriteString(w, "{}")
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
	}
}

// TestNodeScale: every pod is created bound to the nodes round-robin,
// seen Running and then gone; each gives a startup and a deletion sample;
// the nodes' requests come from the audit log of the run's windows, and
// their processes' CPU and memory from /proc (the test's own process
// stands for each node's).
func TestNodeScale(t *testing.T) {
	f := &fakeScaleAPI{events: make(chan string, 1024), pods: map[string]bool{}, perNode: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	api := &APIServer{URL: srv.URL, Token: "tok", HTTP: srv.Client()}

	// Requests of node n0 and of the bench, dated now: in the idle window.
	audit := filepath.Join(t.TempDir(), "audit.log")
	now := time.Now().UTC().Add(500 * time.Millisecond).Format(time.RFC3339Nano)
	lines := auditLine("x1", "RequestReceived", "update", NodeUser("n0"), "leases", "", now) +
		auditLine("x2", "RequestReceived", "get", "bench-admin", "nodes", "", now)
	if err := os.WriteFile(audit, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	nodes := []NodeProcs{{"n0", []Proc{{"agent", self}}}, {"n1", []Proc{{"agent", self}}}, {"n2", []Proc{{"agent", self}}}}
	rep, err := api.NodeScale(context.Background(), NodeScaleOptions{
		Side: "fake", Nodes: nodes, PodsPerNode: 4, CreateRate: 1000, Idle: 1500 * time.Millisecond,
		Image: "pause", AuditLog: audit, Timeout: time.Minute, SampleEvery: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Startup) != 12 || len(rep.Deletion) != 12 || rep.NotRunning != 0 || rep.NotDeleted != 0 || len(rep.Errors) > 0 {
		t.Errorf("startup %d samples, deletion %d, not running %d, not deleted %d, errors %v; want 12, 12, 0, 0, none",
			len(rep.Startup), len(rep.Deletion), rep.NotRunning, rep.NotDeleted, rep.Errors)
	}
	for _, n := range nodes {
		if f.perNode[n.Name] != 4 {
			t.Errorf("pods bound to %s: %d, want 4 (round-robin): %v", n.Name, f.perNode[n.Name], f.perNode)
		}
	}
	if len(f.pods) != 0 {
		t.Errorf("pods left: %v", f.pods)
	}
	if rep.Idle.Requests.ByClass["update leases"] <= 0 || rep.Idle.Requests.ByClass["get nodes"] != 0 {
		t.Errorf("idle requests %v: want n0's lease update and not the bench's get", rep.Idle.Requests.ByClass)
	}
	if rep.Idle.Usage.PSS <= 0 || rep.Load.Usage.PeakPSS <= 0 || rep.Load.Usage.WindowSecs <= 0 {
		t.Errorf("usage idle %+v, load %+v: want the process's memory and the load window", rep.Idle.Usage, rep.Load.Usage)
	}
	if rep.JoinSeconds <= 0 {
		t.Errorf("join window %v s, want the time from the call to the idle window", rep.JoinSeconds)
	}
	if rep.Nodes != 3 || rep.PodsPerNode != 4 || rep.Side != "fake" {
		t.Errorf("report header %+v", rep)
	}
}
