package runtimeclient

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
