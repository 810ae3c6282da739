package prober

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/syncpod/syncpod/internal/handler"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Execer runs a command in a container (CRI ExecSync).
type Execer interface {
	// ExecSync runs cmd in the container and returns its exit code. An
	// error means the command could not be run (not that it failed).
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (exitCode int32, err error)
}

// outcome of one probe attempt.
type outcome int

const (
	outcomeError outcome = iota // could not probe: no result change
	outcomeSuccess
	outcomeFailure
)

// target is what a probe attempt needs to know about the container.
type target struct {
	containerID string
	host        string // default host for tcp/http: 127.0.0.1 or the pod IP
}

// Kubernetes defaults for unset probe fields.
const (
	defaultTimeout          = time.Second
	defaultPeriod           = 10 * time.Second
	defaultSuccessThreshold = 1
	defaultFailureThreshold = 3
)

func timeout(p *syncpodv1.Probe) time.Duration {
	if p.GetTimeoutSeconds() > 0 {
		return time.Duration(p.GetTimeoutSeconds()) * time.Second
	}
	return defaultTimeout
}

func period(p *syncpodv1.Probe) time.Duration {
	if p.GetPeriodSeconds() > 0 {
		return time.Duration(p.GetPeriodSeconds()) * time.Second
	}
	return defaultPeriod
}

func successThreshold(p *syncpodv1.Probe) int {
	if p.GetSuccessThreshold() > 0 {
		return int(p.GetSuccessThreshold())
	}
	return defaultSuccessThreshold
}

func failureThreshold(p *syncpodv1.Probe) int {
	if p.GetFailureThreshold() > 0 {
		return int(p.GetFailureThreshold())
	}
	return defaultFailureThreshold
}

// OutputExecer is an Execer that also returns the command's output
// (stdout then stderr), which becomes the message of an Unhealthy event as
// with the kubelet. Execers without it give "command exited with N".
type OutputExecer interface {
	ExecSyncOutput(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (exitCode int32, output []byte, err error)
}

// runProbe makes one attempt and says how it went, with a detail for logs
// and events (the kubelet's probe output).
func runProbe(ctx context.Context, exec Execer, p *syncpodv1.Probe, t target) (outcome, string) {
	to := timeout(p)
	switch h := p.GetHandler().(type) {
	case *syncpodv1.Probe_Exec:
		if exec == nil {
			return outcomeError, "exec probes need an Execer"
		}
		ctx, cancel := context.WithTimeout(ctx, to)
		defer cancel()
		var (
			code   int32
			output []byte
			err    error
		)
		if oe, ok := exec.(OutputExecer); ok {
			code, output, err = oe.ExecSyncOutput(ctx, t.containerID, h.Exec.GetCommand(), to)
		} else {
			code, err = exec.ExecSync(ctx, t.containerID, h.Exec.GetCommand(), to)
		}
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return outcomeFailure, fmt.Sprintf("command %q timed out", strings.Join(h.Exec.GetCommand(), " "))
		case err != nil:
			return outcomeError, err.Error()
		case code != 0 && output != nil:
			return outcomeFailure, string(output)
		case code != 0:
			return outcomeFailure, fmt.Sprintf("command exited with %d", code)
		}
		return outcomeSuccess, ""
	case *syncpodv1.Probe_TcpSocket:
		if err := handler.TCPConnect(ctx, hostOr(h.TcpSocket.GetHost(), t.host), h.TcpSocket.GetPort(), to); err != nil {
			return outcomeFailure, err.Error()
		}
		return outcomeSuccess, ""
	case *syncpodv1.Probe_HttpGet:
		return httpProbe(ctx, h.HttpGet, t, to)
	case *syncpodv1.Probe_Grpc:
		return grpcProbe(ctx, h.Grpc, t.host, to)
	}
	return outcomeError, "probe has no handler"
}

func hostOr(host, dflt string) string {
	if host != "" {
		return host
	}
	return dflt
}

// httpProbe makes an httpGet probe attempt: a same-host redirect is
// followed, as the kubelet's prober does.
func httpProbe(ctx context.Context, g *syncpodv1.HTTPGetAction, t target, to time.Duration) (outcome, string) {
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	code, err := handler.HTTPGet{
		Scheme: g.GetScheme(), Host: hostOr(g.GetHost(), t.host), Port: g.GetPort(), Path: g.GetPath(),
		Headers: handler.HeadersOf(g.GetHttpHeaders()), UserAgent: "syncpod-probe", FollowSameHostRedirects: true,
	}.Get(ctx)
	switch {
	case err != nil:
		return outcomeFailure, err.Error()
	case handler.Succeeded(code):
		return outcomeSuccess, ""
	}
	return outcomeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", code)
}
