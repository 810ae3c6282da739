package handler

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// server answers /ok with 204 when X-Probe is "yes" (503 otherwise),
// and redirects /moved to /ok.
func server(t *testing.T, tls bool) (host string, port int32) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ok" && r.Header.Get("X-Probe") == "yes":
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/moved":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	hs, ps, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(ps)
	return hs, int32(p)
}

func TestHTTPGet(t *testing.T) {
	host, port := server(t, false)
	tlsHost, tlsPort := server(t, true)
	probe := []Header{{"X-Probe", "yes"}}
	tests := []struct {
		name string
		get  HTTPGet
		want int
	}{
		{"2xx with headers", HTTPGet{Host: host, Port: port, Path: "/ok", Headers: probe}, http.StatusNoContent},
		{"a path without its slash", HTTPGet{Host: host, Port: port, Path: "ok", Headers: probe}, http.StatusNoContent},
		{"5xx", HTTPGet{Host: host, Port: port, Path: "/ok"}, http.StatusServiceUnavailable},
		{"probes follow a same-host redirect, headers kept", HTTPGet{Host: host, Port: port, Path: "/moved", Headers: probe, FollowSameHostRedirects: true}, http.StatusNoContent},
		{"hooks take a redirect as the answer", HTTPGet{Host: host, Port: port, Path: "/moved", Headers: probe}, http.StatusFound},
		{"https, certificate not verified", HTTPGet{Scheme: "HTTPS", Host: tlsHost, Port: tlsPort, Path: "/ok", Headers: probe}, http.StatusNoContent},
		{"https answered in http, retried in http", HTTPGet{Scheme: "https", Host: host, Port: port, Path: "/ok", Headers: probe, HTTPFallback: true, MaxBody: 1 << 10}, http.StatusNoContent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, err := tc.get.Get(context.Background())
			if err != nil || code != tc.want {
				t.Fatalf("Get = %d, %v; want %d", code, err, tc.want)
			}
			if Succeeded(code) != (code >= 200 && code < 400) {
				t.Errorf("Succeeded(%d) = %v", code, Succeeded(code))
			}
		})
	}
	if _, err := (HTTPGet{Scheme: "https", Host: host, Port: port, Path: "/ok"}).Get(context.Background()); err == nil {
		t.Error("https answered in http without HTTPFallback: no error")
	}
}

// TestHTTPGetRequest: the Host header sets the request's host, the user
// agent is sent, and the query is kept.
func TestHTTPGetRequest(t *testing.T) {
	var seen http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = http.Header{"Host": {r.Host}, "Agent": {r.Header.Get("User-Agent")}, "Query": {r.URL.RawQuery}, "Path": {r.URL.EscapedPath()}}
	}))
	defer srv.Close()
	hs, ps, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(ps)
	g := HTTPGet{Host: hs, Port: int32(p), Path: "/a%2Fb?x=1&y=2", UserAgent: "kube-lifecycle/syncpod", Headers: []Header{{"host", "example.test"}}}
	if code, err := g.Get(context.Background()); err != nil || code != http.StatusOK {
		t.Fatalf("Get = %d, %v", code, err)
	}
	want := map[string]string{"Host": "example.test", "Agent": "kube-lifecycle/syncpod", "Query": "x=1&y=2", "Path": "/a%2Fb"}
	for k, v := range want {
		if got := seen.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestURL(t *testing.T) {
	tests := []struct {
		get  HTTPGet
		want string
	}{
		{HTTPGet{Host: "10.0.0.1", Port: 80, Path: "healthz"}, "http://10.0.0.1:80/healthz"},
		{HTTPGet{Scheme: "HTTPS", Host: "::1", Port: 443, Path: "/a?b=c"}, "https://[::1]:443/a?b=c"},
		{HTTPGet{Scheme: "HTTP", Host: "h", Port: 1, Path: "/%zz"}, "http://h:1/%25zz"},
	}
	for _, tc := range tests {
		if got := tc.get.URL().String(); got != tc.want {
			t.Errorf("URL(%+v) = %s, want %s", tc.get, got, tc.want)
		}
	}
}

func TestTCPConnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int32(l.Addr().(*net.TCPAddr).Port)
	if err := TCPConnect(context.Background(), "127.0.0.1", port, 0); err != nil {
		t.Fatalf("open port: %v", err)
	}
	l.Close()
	if err := TCPConnect(context.Background(), "127.0.0.1", port, 0); err == nil {
		t.Fatal("closed port: no error")
	}
}

type apiHeader struct{ n, v string }

func (h *apiHeader) GetName() string  { return h.n }
func (h *apiHeader) GetValue() string { return h.v }

func TestHeadersOf(t *testing.T) {
	got := HeadersOf([]*apiHeader{{"A", "1"}, {"Host", "h"}})
	if len(got) != 2 || got[0] != (Header{"A", "1"}) || got[1] != (Header{"Host", "h"}) {
		t.Errorf("HeadersOf = %v", got)
	}
}
