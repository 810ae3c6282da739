package runner

import (
	"context"
	"errors"
	"slices"
	"strings"

	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	"github.com/syncpod/syncpod/executor/volumes"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// imageVolumePull is the outcome of one image volume's pull in a pass:
// the image to mount, or why there is none.
type imageVolumePull struct {
	spec *runtimeapi.ImageSpec
	err  *imageError
}

// pullImageVolumes makes the pod's image volumes present, each by its
// pull policy, once per pass and before its first container start, as
// the kubelet pulls them before it starts any container of a sync
// . A pull is a step of the pod (no target) with the volume's
// reference; its failure fails only the containers that mount the
// volume (imageVolumeFailure). It reports false when the pass aborted.
func (p *pass) pullImageVolumes(ctx context.Context) bool {
	if p.imageVolumes != nil {
		return true
	}
	p.imageVolumes = map[string]imageVolumePull{}
	for _, v := range p.pod.GetSpec().GetVolumes() {
		src := v.GetImage()
		if src == nil {
			continue
		}
		ref := src.GetReference()
		_, id, ierr := p.ensureImageOf(ctx, "", ref, validation.ImageVolumePullPolicy(src), ref)
		if p.abort != nil {
			return false
		}
		if ierr != nil {
			p.imageVolumes[v.GetName()] = imageVolumePull{err: ierr}
			continue
		}
		p.imageVolumes[v.GetName()] = imageVolumePull{spec: &runtimeapi.ImageSpec{
			Image: id, UserSpecifiedImage: ref, Annotations: p.pod.GetAnnotations(),
		}}
	}
	return true
}

// imageVolumeFailure is the failed pull of an image volume c mounts (the
// last one in mount order, as the kubelet reports it), with the volume's
// reference; nil when every image volume c mounts is present.
func (p *pass) imageVolumeFailure(c *syncpodv1.Container) (*imageError, string) {
	var failed *imageError
	ref := ""
	for _, vm := range c.GetVolumeMounts() {
		res, ok := p.imageVolumes[vm.GetName()]
		if !ok || res.err == nil {
			continue
		}
		failed = res.err
		for _, v := range p.pod.GetSpec().GetVolumes() {
			if v.GetName() == vm.GetName() {
				ref = v.GetImage().GetReference()
			}
		}
	}
	return failed, ref
}

// imageVolumeSpecs are the images of the image volumes pulled in this
// pass, by volume name, for the container mounts.
func (p *pass) imageVolumeSpecs() volumes.Images {
	out := volumes.Images{}
	for name, res := range p.imageVolumes {
		if res.spec != nil {
			out[name] = res.spec
		}
	}
	return out
}

// hasHostVolumes reports whether pod has a volume the executor makes on
// the node (every kind but image volumes, which the runtime mounts).
func hasHostVolumes(pod *syncpodv1.Pod) bool {
	return slices.ContainsFunc(pod.GetSpec().GetVolumes(), func(v *syncpodv1.Volume) bool { return v.GetImage() == nil })
}

// countImageVolumeMounts counts, as the kubelet does after each container
// start that got past its image volumes' pulls, the image
// volumes c mounts (each once) as requested, and each of its mounts of
// one as failed when createErr, the CreateContainer error, is a gRPC
// status whose message starts with the CRI's ImageVolumeMountFailed, as
// succeeded otherwise (whatever else failed the start). containerd 2.x
// puts "failed to mount image volume: " before that word, so its refusals
// count as succeeded under the kubelet, and here alike.
func (p *pass) countImageVolumeMounts(c *syncpodv1.Container, createErr error) {
	m := p.r.m
	if m == nil || len(p.imageVolumes) == 0 {
		return
	}
	failed := false
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(createErr, &se) {
		failed = strings.HasPrefix(se.GRPCStatus().Message(), crierrors.ErrImageVolumeMountFailed.Error())
	}
	seen := map[string]bool{}
	for _, vm := range c.GetVolumeMounts() {
		if p.imageVolumes[vm.GetName()].spec == nil {
			continue
		}
		if !seen[vm.GetName()] {
			seen[vm.GetName()] = true
			m.imageVolumesRequested.Inc()
		}
		if failed {
			m.imageVolumeMountsFailed.Inc()
		} else {
			m.imageVolumeMountsOK.Inc()
		}
	}
}
