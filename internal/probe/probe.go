package probe

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

// Outcome is how one probe attempt went.
type Outcome int

// The outcomes of an attempt.
const (
	// Error: the probe could not be made (not a failed check); it changes
	// no result.
	Error Outcome = iota
	// Success: the check passed.
	Success
	// Failure: the check failed.
	Failure
)

// Target is what a probe attempt needs to know about the container.
type Target struct {
	// ContainerID is the instance exec probes run in.
	ContainerID string
	// Host is the default host of tcpSocket, httpGet and grpc probes:
	// 127.0.0.1 for a host-network pod, the pod's IP otherwise.
	Host string
}

// Kubernetes defaults for unset probe fields.
const (
	defaultTimeout          = time.Second
	defaultPeriod           = 10 * time.Second
	defaultSuccessThreshold = 1
	defaultFailureThreshold = 3
)

// Timeout is the probe's timeout_seconds, or the Kubernetes default (1 s).
func Timeout(p *syncpodv1.Probe) time.Duration {
	if p.GetTimeoutSeconds() > 0 {
		return time.Duration(p.GetTimeoutSeconds()) * time.Second
	}
	return defaultTimeout
}

// Period is the probe's period_seconds, or the Kubernetes default (10 s).
func Period(p *syncpodv1.Probe) time.Duration {
	if p.GetPeriodSeconds() > 0 {
		return time.Duration(p.GetPeriodSeconds()) * time.Second
	}
	return defaultPeriod
}

// SuccessThreshold is the probe's success_threshold, or 1.
func SuccessThreshold(p *syncpodv1.Probe) int {
	if p.GetSuccessThreshold() > 0 {
		return int(p.GetSuccessThreshold())
	}
	return defaultSuccessThreshold
}

// FailureThreshold is the probe's failure_threshold, or 3.
func FailureThreshold(p *syncpodv1.Probe) int {
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

// Attempt makes one attempt of probe p on t and says how it went, with a
// detail for logs and events (the kubelet's probe output).
func Attempt(ctx context.Context, exec Execer, p *syncpodv1.Probe, t Target) (Outcome, string) {
	to := Timeout(p)
	switch h := p.GetHandler().(type) {
	case *syncpodv1.Probe_Exec:
		if exec == nil {
			return Error, "exec probes need an Execer"
		}
		ctx, cancel := context.WithTimeout(ctx, to)
		defer cancel()
		var (
			code   int32
			output []byte
			err    error
		)
		if oe, ok := exec.(OutputExecer); ok {
			code, output, err = oe.ExecSyncOutput(ctx, t.ContainerID, h.Exec.GetCommand(), to)
		} else {
			code, err = exec.ExecSync(ctx, t.ContainerID, h.Exec.GetCommand(), to)
		}
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return Failure, fmt.Sprintf("command %q timed out", strings.Join(h.Exec.GetCommand(), " "))
		case err != nil:
			return Error, err.Error()
		case code != 0 && output != nil:
			return Failure, string(output)
		case code != 0:
			return Failure, fmt.Sprintf("command exited with %d", code)
		}
		return Success, ""
	case *syncpodv1.Probe_TcpSocket:
		if err := handler.TCPConnect(ctx, hostOr(h.TcpSocket.GetHost(), t.Host), h.TcpSocket.GetPort(), to); err != nil {
			return Failure, err.Error()
		}
		return Success, ""
	case *syncpodv1.Probe_HttpGet:
		return httpAttempt(ctx, h.HttpGet, t, to)
	case *syncpodv1.Probe_Grpc:
		return grpcAttempt(ctx, h.Grpc, t.Host, to)
	}
	return Error, "probe has no handler"
}

func hostOr(host, dflt string) string {
	if host != "" {
		return host
	}
	return dflt
}

// httpAttempt makes an httpGet probe attempt: a same-host redirect is
// followed, as the kubelet's prober does.
func httpAttempt(ctx context.Context, g *syncpodv1.HTTPGetAction, t Target, to time.Duration) (Outcome, string) {
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	code, err := handler.HTTPGet{
		Scheme: g.GetScheme(), Host: hostOr(g.GetHost(), t.Host), Port: g.GetPort(), Path: g.GetPath(),
		Headers: handler.HeadersOf(g.GetHttpHeaders()), UserAgent: "syncpod-probe", FollowSameHostRedirects: true,
	}.Get(ctx)
	switch {
	case err != nil:
		return Failure, err.Error()
	case handler.Succeeded(code):
		return Success, ""
	}
	return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", code)
}
