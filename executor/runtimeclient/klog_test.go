package runtimeclient

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
)

// The CRI client logs a status call on a removed container at ERROR,
// which would put an "executor ERROR ... NotFound" line in the log for
// every second removal of a gone container: such records go to DEBUG.
func TestQuietNotFoundDemotesTheClientsNotFoundErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		wantLevel string // "" when nothing is written at INFO
	}{
		{"gRPC NotFound", status.Error(codes.NotFound, `an error occurred when try to find container "c1": not found`), ""},
		{"containerd wording as Unknown", status.Error(codes.Unknown, `container "c1" in namespace "k8s.io": not found`), ""},
		{"runtime down", status.Error(codes.Unavailable, "connection refused"), "level=ERROR"},
		{"other failure", errors.New("permission denied"), "level=ERROR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
				var buf bytes.Buffer
				log := logr.FromSlogHandler(QuietNotFound(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})))
				log.WithValues("component", "cri").Error(tc.err, "ContainerStatus from runtime service failed", "containerID", "c1")
				out := buf.String()
				want := tc.wantLevel
				if want == "" && level == slog.LevelDebug {
					want = "level=DEBUG" // still there for whoever debugs
				}
				if want == "" {
					if out != "" {
						t.Errorf("at %v: logged %q, want nothing", level, out)
					}
					continue
				}
				if !strings.Contains(out, want) || !strings.Contains(out, "containerID=c1") || !strings.Contains(out, "component=cri") {
					t.Errorf("at %v: logged %q, want %s with its attributes", level, out, want)
				}
			}
		})
	}
}

// loggingRuntime logs each ListPodSandbox to the logger of its context,
// as the kubelet's CRI client does (klog.FromContext).
type loggingRuntime struct{ internalapi.RuntimeService }

func (r loggingRuntime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	logr.FromContextOrDiscard(ctx).Info("listing sandboxes")
	return r.RuntimeService.ListPodSandbox(ctx, f)
}

// Two executors in one process each hear their own CRI client: a view
// made WithClientLogger hands its logger to the client in each call's
// context, and klog's process-wide logger is not involved.
func TestTheCRIClientLogsToTheLoggerOfItsView(t *testing.T) {
	base := NewRuntime(loggingRuntime{critest.NewRuntime()}, nil, Timeouts{})
	var a, b bytes.Buffer
	ra := base.WithClientLogger(logr.FromSlogHandler(slog.NewTextHandler(&a, nil)))
	rb := base.WithClientLogger(logr.FromSlogHandler(slog.NewTextHandler(&b, nil)))
	if _, err := ra.ListPodSandbox(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.String(), "listing sandboxes") || b.Len() != 0 {
		t.Fatalf("after a call through view a: a logged %q, b %q; want the line in a only", a.String(), b.String())
	}
	if _, err := rb.ListPodSandbox(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if strings.Count(a.String(), "listing sandboxes") != 1 || !strings.Contains(b.String(), "listing sandboxes") {
		t.Fatalf("after a call through view b: a logged %q, b %q; want one line each", a.String(), b.String())
	}
}
