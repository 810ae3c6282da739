package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	p := &syncpodv1.Probe{Handler: &syncpodv1.Probe_TcpSocket{TcpSocket: &syncpodv1.TCPSocketAction{Port: int32(port)}}}
	if out, detail := Attempt(context.Background(), nil, p, Target{Host: "127.0.0.1"}); out != Success {
		t.Fatalf("open port: %v %s", out, detail)
	}
	l.Close()
	if out, _ := Attempt(context.Background(), nil, p, Target{Host: "127.0.0.1"}); out != Failure {
		t.Fatalf("closed port: %v, want failure", out)
	}
}

func TestHTTPProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz" && r.Header.Get("X-Probe") == "yes":
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/moved":
			http.Redirect(w, r, "/healthz", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	probe := func(path string, headers ...*syncpodv1.HTTPHeader) *syncpodv1.Probe {
		return &syncpodv1.Probe{Handler: &syncpodv1.Probe_HttpGet{HttpGet: &syncpodv1.HTTPGetAction{Path: path, Port: int32(port), HttpHeaders: headers}}}
	}
	hdr := &syncpodv1.HTTPHeader{Name: "X-Probe", Value: "yes"}
	tests := []struct {
		name  string
		probe *syncpodv1.Probe
		want  Outcome
	}{
		{"2xx with headers succeeds", probe("/healthz", hdr), Success},
		{"5xx fails", probe("/healthz"), Failure},
		{"redirect is followed to a failing target", probe("moved"), Failure},
		{"redirect is followed with the headers", probe("/moved", hdr), Success},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if out, detail := Attempt(context.Background(), nil, tc.probe, Target{Host: "127.0.0.1"}); out != tc.want {
				t.Fatalf("outcome %v (%s), want %v", out, detail, tc.want)
			}
		})
	}
}
