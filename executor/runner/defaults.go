package runner

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/runtimeclient"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// containerOptions gathers what the kubelet's generateContainerConfig
// looks up before it builds a container config: the image's user (and the
// runAsNonRoot check against it), the pod's hosts file and a fresh
// termination-log file, then the pod's volumes, the container's volume
// mounts and its environment (env sources, the downward API), returned as
// env. The kubelet's default mounts are added after the volume mounts and
// yield to them. An error refuses the start with
// CreateContainerConfigError, as the kubelet does; an unreachable runtime
// is returned as is (the caller aborts the pass). img is the image's
// status when the caller has just read it; nil means ask the runtime.
func (p *pass) containerOptions(ctx context.Context, c *syncpodv1.Container, img *runtimeapi.Image) (ContainerOptions, []*runtimeapi.KeyValue, error) {
	opts := ContainerOptions{Security: p.r.security, MemoryCapacity: p.r.memCap}
	if img == nil {
		st, err := p.img.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.GetImage()}, false)
		if err != nil {
			return opts, nil, err
		}
		img = st.GetImage()
	}
	opts.Image = imageUser(img)
	if err := VerifyRunAsNonRoot(p.pod, c, opts.Image); err != nil {
		return opts, nil, err
	}
	if err := VerifyAppArmor(p.pod, c, p.r.security.AppArmorEnabled); err != nil {
		return opts, nil, err
	}
	mounts, env, err := p.containerVolumesAndEnv(ctx, c)
	if err != nil {
		return opts, nil, err
	}
	opts.Mounts = mounts
	if p.r.podRoot == "" {
		return opts, env, nil
	}
	hosts := ""
	ips, err := p.podIPs(ctx)
	if err != nil {
		return opts, nil, err
	}
	if p.pod.GetSpec().GetHostNetwork() || len(ips) > 0 {
		if hosts, err = p.r.writeHostsFile(p.pod, ips); err != nil {
			return opts, nil, fmt.Errorf("write the pod's hosts file: %w", err)
		}
	}
	termLog, err := p.r.newTerminationLog(p.pod, c.GetName())
	if err != nil {
		return opts, nil, fmt.Errorf("create the termination log: %w", err)
	}
	opts.Mounts = append(opts.Mounts, DefaultMounts(c, opts.Mounts, hosts, termLog)...)
	return opts, env, nil
}

// podIPs are the pod's IPs: those of the sandbox the pass starts
// containers in or, in a pass that names none (a pass that only kills:
// a deleted, finished or orphaned pod), of the newest observed sandbox
// while it is ready, as the kubelet reads the pod's IPs from its latest
// sandbox. They come from the observed pod when it lists that sandbox
// with an IP, else from CRI. Host-network pods have none of their own.
// Safe for concurrent use within a pass.
func (p *pass) podIPs(ctx context.Context) ([]string, error) {
	if p.pod.GetSpec().GetHostNetwork() {
		return nil, nil
	}
	id := p.sandboxID
	if id == "" {
		sb := newestSandbox(p.observed)
		if sb.GetState() != syncpodv1.SandboxState_SANDBOX_STATE_READY {
			return nil, nil
		}
		id = sb.GetId()
	}
	for _, sb := range p.observed.GetSandboxes() {
		if sb.GetId() == id && sb.GetIp() != "" {
			return []string{sb.GetIp()}, nil
		}
	}
	st, err := p.rt.PodSandboxStatus(ctx, id, false)
	if err != nil {
		// Not p.fatal here: preStop hooks call this from the kill
		// goroutines; the caller classifies the error.
		return nil, runtimeclient.IgnoreNotFound(err)
	}
	net := st.GetStatus().GetNetwork()
	var ips []string
	if net.GetIp() != "" {
		ips = append(ips, net.GetIp())
	}
	for _, ip := range net.GetAdditionalIps() {
		if ip.GetIp() != "" {
			ips = append(ips, ip.GetIp())
		}
	}
	return ips, nil
}

// newestSandbox is the observed sandbox created last (ties broken by id,
// as the planner orders them); nil when there is none.
func newestSandbox(o *syncpodv1.ObservedPod) *syncpodv1.ObservedSandbox {
	var newest *syncpodv1.ObservedSandbox
	for _, sb := range o.GetSandboxes() {
		if newest == nil {
			newest = sb
			continue
		}
		a, b := sb.GetCreatedAt().AsTime(), newest.GetCreatedAt().AsTime()
		if a.After(b) || (a.Equal(b) && sb.GetId() < newest.GetId()) {
			newest = sb
		}
	}
	return newest
}
