package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/internal/handler"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Lifecycle hooks, run by the executor as the kubelet's handler runner
// does: exec in the container (CRI ExecSync), an HTTP GET, a TCP connect
// (the kubelet refuses tcpSocket hooks as invalid; syncpod connects, which
// is what such a hook asks for), or a sleep.

// Step reasons of hooks, as the kubelet names them.
const (
	ReasonFailedPostStartHook = "FailedPostStartHook"
	ReasonFailedPreStopHook   = "FailedPreStopHook"
	ReasonPostStartHookError  = "PostStartHookError"
)

// maxHookBody bounds what is read of an HTTP hook's response.
const maxHookBody = 10 << 10

// runHook runs h for instance id of container c and returns the kubelet's
// failure message with the error. timeout bounds an exec hook (0: none
// but ctx).
func (p *pass) runHook(ctx context.Context, c *syncpodv1.Container, id string, h *syncpodv1.LifecycleHandler, timeout time.Duration) (string, error) {
	switch a := h.GetAction().(type) {
	case *syncpodv1.LifecycleHandler_Exec:
		cmd := a.Exec.GetCommand()
		stdout, stderr, err := p.rt.ExecSync(ctx, id, cmd, timeout)
		if err == nil {
			return "", nil
		}
		if code, ok := runtimeclient.ExitCode(err); ok {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, stderr)
		}
		return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
			cmd, c.GetName(), podDesc(p.pod), err, string(stdout)+string(stderr)), err
	case *syncpodv1.LifecycleHandler_HttpGet:
		err := p.httpHook(ctx, a.HttpGet)
		if err == nil {
			return "", nil
		}
		return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
			a.HttpGet.GetPath(), c.GetName(), podDesc(p.pod), err), err
	case *syncpodv1.LifecycleHandler_TcpSocket:
		host, err := p.hookHost(ctx, a.TcpSocket.GetHost())
		if err == nil {
			if err = handler.TCPConnect(ctx, host, a.TcpSocket.GetPort(), 0); err == nil {
				return "", nil
			}
		}
		return fmt.Sprintf("TCP lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
			a.TcpSocket.GetPort(), c.GetName(), podDesc(p.pod), err), err
	case *syncpodv1.LifecycleHandler_Sleep:
		t := time.NewTimer(time.Duration(a.Sleep.GetSeconds()) * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
			return "", nil
		case <-ctx.Done():
			err := errors.New("container terminated before sleep hook finished")
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				a.Sleep.GetSeconds(), c.GetName(), podDesc(p.pod), err), err
		}
	}
	err := fmt.Errorf("invalid handler: %v", h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// hookHost is host, else the pod's IP: 127.0.0.1 for a host-network pod
// (the node's own address seen from the node), else the sandbox's IP
// (podIPs; at a pod's kill too, R-18.4).
func (p *pass) hookHost(ctx context.Context, host string) (string, error) {
	if host != "" {
		return host, nil
	}
	if p.pod.GetSpec().GetHostNetwork() {
		return "127.0.0.1", nil
	}
	ips, err := p.podIPs(ctx)
	if err != nil {
		return "", err
	}
	if len(ips) == 0 {
		return "", errors.New("failed to find the pod's IP")
	}
	return ips[0], nil
}

// httpHook issues the GET of an httpGet hook; a status outside 200-399 or
// a transport error fails it. A redirect is not followed (its status is
// the answer), and an HTTPS request answered in plain HTTP is retried
// over HTTP, as the kubelet does.
func (p *pass) httpHook(ctx context.Context, g *syncpodv1.HTTPGetAction) error {
	host, err := p.hookHost(ctx, g.GetHost())
	if err != nil {
		return err
	}
	code, err := handler.HTTPGet{
		Scheme: g.GetScheme(), Host: host, Port: g.GetPort(), Path: g.GetPath(),
		Headers: handler.HeadersOf(g.GetHttpHeaders()), UserAgent: "kube-lifecycle/syncpod",
		HTTPFallback: true, MaxBody: maxHookBody,
	}.Get(ctx)
	if err != nil {
		return err
	}
	if !handler.Succeeded(code) {
		return fmt.Errorf("HTTP lifecycle hook returned status %d", code)
	}
	return nil
}

// postStart runs c's postStart hook on the just-started instance id. On
// failure it records the hook step, kills the instance (its preStop hook
// included) and returns the kubelet's message for the start step.
func (p *pass) postStart(ctx context.Context, c *syncpodv1.Container, id string) (string, bool) {
	h := c.GetLifecycle().GetPostStart()
	if h == nil {
		return "", true
	}
	t0 := time.Now()
	msg, err := p.runHook(ctx, c, id, h, 0)
	if err == nil {
		p.add(executorv1.Step_STEP_POST_START_HOOK, c.GetName(), executorv1.Outcome_OUTCOME_SUCCEEDED, t0, withContainer(id))
		return "", true
	}
	p.r.log.Info("postStart hook failed", "pod_uid", p.pod.GetUid(), "container", c.GetName(), "container_id", id, "err", err)
	p.add(executorv1.Step_STEP_POST_START_HOOK, c.GetName(), executorv1.Outcome_OUTCOME_FAILED, t0,
		withReason(ReasonFailedPostStartHook, msg), withContainer(id))
	p.killContainer(ctx, &syncpodv1.ContainerKill{ContainerId: id, Name: c.GetName(), Message: ReasonFailedPostStartHook})
	return msg, false
}

// preStop runs c's preStop hook on instance id for at most grace seconds
// and returns the grace left for the stop (never below MinGracePeriod).
// A failure is recorded as a FailedPreStopHook step; the stop goes ahead.
// It adds no step itself; the caller adds the returned result.
func (p *pass) preStop(ctx context.Context, c *syncpodv1.Container, id string, grace int64) (left int64, step *executorv1.StepResult) {
	h := c.GetLifecycle().GetPreStop()
	if h == nil || grace <= 0 {
		return grace, nil
	}
	t0 := time.Now()
	hctx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second)
	defer cancel()
	msg, err := p.runHook(hctx, c, id, h, time.Duration(grace)*time.Second)
	took := time.Since(t0)
	step = &executorv1.StepResult{Step: executorv1.Step_STEP_PRE_STOP_HOOK, Target: c.GetName(), ContainerId: id,
		Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED}
	if err != nil {
		p.r.log.Info("preStop hook failed", "pod_uid", p.pod.GetUid(), "container", c.GetName(), "container_id", id, "err", err)
		step.Outcome, step.Reason, step.Message = executorv1.Outcome_OUTCOME_FAILED, ReasonFailedPreStopHook, msg
	}
	step.Duration = durationpb.New(took)
	return max(grace-int64(took/time.Second), MinGracePeriod), step
}
