package containerdtest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records Skipf/Fatalf instead of stopping
// the goroutine; Endpoint returns right after either, so this is enough.
type recorder struct {
	testing.TB
	ctx     context.Context
	skipped string
	fatal   string
}

func (r *recorder) Helper()                  {}
func (r *recorder) Name() string             { return "Fake" }
func (r *recorder) Context() context.Context { return r.ctx }
func (r *recorder) Skipf(f string, a ...any) { r.skipped = fmt.Sprintf(f, a...) }
func (r *recorder) Fatalf(f string, a ...any) {
	r.fatal = fmt.Sprintf(f, a...)
}

func TestEndpointUnavailable(t *testing.T) {
	// A socket that accepts and never speaks gRPC: the CRI Version check
	// must time out rather than hang.
	silent := filepath.Join(t.TempDir(), "silent.sock")
	ln, err := net.Listen("unix", silent)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	tests := []struct {
		name     string
		endpoint string
		require  string
		wantSkip string // substring of the skip message; "" = no skip
		wantFail string // substring of the failure; "" = no failure
	}{
		{name: "unset endpoint skips", endpoint: "", wantSkip: EnvEndpoint + " is not set"},
		{name: "unset endpoint fails when required", endpoint: "", require: "1", wantFail: EnvEndpoint + " is not set"},
		{name: "missing socket skips", endpoint: "unix:///nonexistent/containerd.sock", wantSkip: "no such file"},
		{name: "missing socket fails when required", endpoint: "unix:///nonexistent/containerd.sock", require: "1", wantFail: "no such file"},
		{name: "require other than 1 only skips", endpoint: "", require: "true", wantSkip: "is not set"},
		{name: "silent socket fails when required", endpoint: "unix://" + silent, require: "1", wantFail: "does not answer CRI Version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvEndpoint, tc.endpoint)
			t.Setenv(EnvRequire, tc.require)
			r := &recorder{TB: t, ctx: t.Context()}
			if got := endpoint(r, 300*time.Millisecond); got != "" {
				t.Errorf("Endpoint = %q, want empty", got)
			}
			check := func(what, got, want string) {
				if want == "" && got != "" {
					t.Errorf("unexpected %s: %s", what, got)
				}
				if want != "" && !strings.Contains(got, want) {
					t.Errorf("%s = %q, want it to contain %q", what, got, want)
				}
			}
			check("skip", r.skipped, tc.wantSkip)
			check("failure", r.fatal, tc.wantFail)
		})
	}
}

// A node's containerd is EnvNodeEndpoint's when set (the check names that
// variable and its socket), else the shared one's.
func TestNodeEndpointPrefersTheNodesContainerd(t *testing.T) {
	for _, tc := range []struct {
		name, node, shared, want string
	}{
		{"the node's containerd when set", "unix:///nonexistent/node.sock", "unix:///nonexistent/shared.sock", "node.sock"},
		{"else the shared one", "", "unix:///nonexistent/shared.sock", "shared.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvNodeEndpoint, tc.node)
			t.Setenv(EnvEndpoint, tc.shared)
			t.Setenv(EnvRequire, "")
			r := &recorder{TB: t, ctx: t.Context()}
			if got := NodeEndpoint(r); got != "" {
				t.Errorf("NodeEndpoint = %q, want empty (no socket)", got)
			}
			if !strings.Contains(r.skipped, tc.want) {
				t.Errorf("skip %q, want it to name %s", r.skipped, tc.want)
			}
		})
	}
}

func TestImageNames(t *testing.T) {
	t.Setenv(EnvPauseImage, "")
	t.Setenv(EnvBusyboxImage, "")
	if PauseImage() != DefaultPauseImage || BusyboxImage() != DefaultBusyboxImage {
		t.Errorf("defaults = %s, %s", PauseImage(), BusyboxImage())
	}
	t.Setenv(EnvPauseImage, "example/pause:1")
	t.Setenv(EnvBusyboxImage, "example/busybox:1")
	if PauseImage() != "example/pause:1" || BusyboxImage() != "example/busybox:1" {
		t.Errorf("from env = %s, %s", PauseImage(), BusyboxImage())
	}
}

func TestUniqueName(t *testing.T) {
	a, b := UniqueName(t), UniqueName(t)
	if a == b {
		t.Errorf("two names collide: %s", a)
	}
	if !strings.HasPrefix(a, "testuniquename-") {
		t.Errorf("name %q does not derive from the test name", a)
	}
	for _, r := range a {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			t.Errorf("name %q is not a DNS-1123 label", a)
			break
		}
	}
}
