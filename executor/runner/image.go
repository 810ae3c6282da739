package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// PullPolicy is c's effective pull policy: its own, else the API
// server's default by tag (validation.DefaultPullPolicy).
func PullPolicy(c *syncpodv1.Container) syncpodv1.ImagePullPolicy {
	if p := c.GetImagePullPolicy(); p != syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_UNSPECIFIED {
		return p
	}
	return validation.DefaultPullPolicy(c.GetImage())
}

// imageError is a failed image step: reason (ErrImagePull,
// ImagePullBackOff, ErrImageNeverPull, ImageInspectError) and message.
type imageError struct {
	reason, msg string
	until       time.Time
}

func (e *imageError) Error() string { return e.reason + ": " + e.msg }

// ensureImage makes c's image present according to its pull policy and
// records a STEP_PULL_IMAGE result. It returns the image's status when it
// read one that found the image present, so the container config need not
// ask the runtime again (nil after a pull).
func (p *pass) ensureImage(ctx context.Context, c *syncpodv1.Container) (*runtimeapi.Image, *imageError) {
	img, _, err := p.ensureImageOf(ctx, c.GetName(), c.GetImage(), PullPolicy(c), "")
	return img, err
}

// ensureImageOf makes image present according to policy, as the
// kubelet's image puller does for a container's image and an image
// volume's alike, and records a STEP_PULL_IMAGE result for target (a
// container, or "" for the pod) with volumeRef set for an image volume's
// pull. It returns the image's status when it read one that found the
// image present (nil after a pull) and the image's reference in the
// runtime: its id when present, else what PullImage answered.
func (p *pass) ensureImageOf(ctx context.Context, target, image string, policy syncpodv1.ImagePullPolicy, volumeRef string) (*runtimeapi.Image, string, *imageError) {
	t0 := time.Now()
	spec := &runtimeapi.ImageSpec{Image: image}
	var vol []stepOpt
	if volumeRef != "" {
		vol = append(vol, withImageVolume(volumeRef))
	}
	fail := func(e *imageError) (*runtimeapi.Image, string, *imageError) {
		opts := append([]stepOpt{withReason(e.reason, e.msg)}, vol...)
		if !e.until.IsZero() {
			opts = append(opts, p.withUntil(e.until))
		}
		p.add(executorv1.Step_STEP_PULL_IMAGE, target, executorv1.Outcome_OUTCOME_FAILED, t0, opts...)
		return nil, "", e
	}
	if policy != syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS {
		st, err := p.imageStatus(ctx, spec)
		if err != nil && !p.fatal(err) {
			return fail(&imageError{reason: "ImageInspectError", msg: fmt.Sprintf("Failed to inspect image %q: %v", image, err)})
		} else if err != nil {
			return nil, "", &imageError{reason: "ImageInspectError", msg: err.Error()}
		}
		if img := st.GetImage(); img != nil {
			p.add(executorv1.Step_STEP_PULL_IMAGE, target, executorv1.Outcome_OUTCOME_SUCCEEDED, t0,
				append([]stepOpt{withMessage(fmt.Sprintf("Container image %q already present on machine", image))}, vol...)...)
			return img, img.GetId(), nil
		}
		if policy == syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER {
			return fail(&imageError{reason: "ErrImageNeverPull",
				msg: fmt.Sprintf("Container image %q is not present with pull policy of Never", image)})
		}
	}
	key := p.pod.GetUid() + "_" + image
	now := p.r.clock.Now()
	if until, in := p.r.pulls.inBackOff(key, now); in {
		return fail(&imageError{reason: "ImagePullBackOff", until: until,
			msg: fmt.Sprintf("Back-off pulling image %q", image)})
	}
	ref, err := p.img.PullImage(ctx, spec, nil, p.sandboxConfig())
	if p.r.m != nil {
		p.r.m.imagePullDuration.Observe(time.Since(t0).Seconds())
	}
	if err != nil {
		if p.r.m != nil {
			p.r.m.imagePulls.WithLabelValues("failure").Inc()
		}
		if p.fatal(err) {
			return nil, "", &imageError{reason: "ErrImagePull", msg: err.Error()}
		}
		p.r.pulls.next(key, now)
		return fail(&imageError{reason: "ErrImagePull", msg: pullFailureMessage(image, err)})
	}
	if p.r.m != nil {
		p.r.m.imagePulls.WithLabelValues("success").Inc()
	}
	p.r.pulls.reset(key)
	p.add(executorv1.Step_STEP_PULL_IMAGE, target, executorv1.Outcome_OUTCOME_SUCCEEDED, t0,
		append([]stepOpt{withMessage(fmt.Sprintf("Successfully pulled image %q", image))}, vol...)...)
	return nil, ref, nil
}

// pullFailureMessage is a failed pull's message, the waiting container's
// and the pull step's, as the kubelet's image manager words it:
// the runtime's error, or for the two errors the CRI names, what they
// mean; the "Failed to pull image" event adds its own prefix to it.
func pullFailureMessage(image string, err error) string {
	msg := err.Error()
	for _, known := range []struct {
		err     error
		meaning string
	}{
		{crierrors.ErrRegistryUnavailable, "the registry is unavailable"},
		{crierrors.ErrSignatureValidationFailed, "the signature validation failed"},
	} {
		if rest, ok := strings.CutPrefix(msg, known.err.Error()); ok {
			return fmt.Sprintf("image pull failed for %s because %s%s", image, known.meaning, rest)
		}
	}
	return msg
}

// earlyImage is one image status read while the pod's sandbox is being
// created; done is closed once st and err are set.
type earlyImage struct {
	done chan struct{}
	st   *runtimeapi.ImageStatusResponse
	err  error
}

// readImagesEarly begins reading the status of each image the pass will
// start a container from, unless its pull policy is Always, while the
// sandbox is created. The kubelet reads it after RunPodSandbox (R-8 steps
// 4 and 7-8); under load that read waits for the runtime as long as a
// CreateContainer does (11 to 13 ms of a ten-pod burst on two cores), in
// front of every container. Read during RunPodSandbox, it costs the start
// nothing. Only the read moves: a pull still comes after the sandbox, and
// the decision is still made at the container's turn. Each result is taken
// by the first start that needs it (imageStatus), so a later container of
// the same image reads again, as with the kubelet, and sees the pull the
// first one made.
func (p *pass) readImagesEarly(ctx context.Context) {
	for _, cs := range slices.Concat(p.actions.GetEphemeralContainersToStart(), p.actions.GetInitContainersToStart(), p.actions.GetContainersToStart()) {
		c, _, _ := findContainer(p.pod, cs.GetName())
		if c == nil || c.GetImage() == "" || PullPolicy(c) == syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS {
			continue
		}
		if _, ok := p.early[c.GetImage()]; ok {
			continue
		}
		if p.early == nil {
			p.early = map[string]*earlyImage{}
		}
		e := &earlyImage{done: make(chan struct{})}
		p.early[c.GetImage()] = e
		go func(image string) {
			defer close(e.done)
			e.st, e.err = p.img.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
		}(c.GetImage())
	}
}

// imageStatus is the status of spec's image: the one read early, if that
// read succeeded and no start has taken it yet, else a fresh read.
func (p *pass) imageStatus(ctx context.Context, spec *runtimeapi.ImageSpec) (*runtimeapi.ImageStatusResponse, error) {
	if e, ok := p.early[spec.GetImage()]; ok {
		delete(p.early, spec.GetImage())
		<-e.done // the read ends with ctx, as the one below would
		if e.err == nil {
			return e.st, nil
		}
	}
	return p.img.ImageStatus(ctx, spec, false)
}

// earlyDone waits for the early reads no start took (the sandbox failed,
// a start was skipped), so none outlives the pass.
func (p *pass) earlyDone() {
	for image, e := range p.early {
		<-e.done
		delete(p.early, image)
	}
}

// memBackoff is the image pull back-off: in memory like the kubelet's
// (client-go flowcontrol semantics, checked against the last update).
type memBackoff struct {
	mu      sync.Mutex
	initial time.Duration
	max     time.Duration
	entries map[string]memEntry
}

type memEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newMemBackoff(initial, maxDelay time.Duration) *memBackoff {
	return &memBackoff{initial: initial, max: maxDelay, entries: map[string]memEntry{}}
}

func (b *memBackoff) inBackOff(key string, now time.Time) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || now.Sub(e.lastUpdate) > 2*b.max {
		return time.Time{}, false
	}
	until := e.lastUpdate.Add(e.delay)
	return until, now.Before(until)
}

func (b *memBackoff) next(key string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || now.Sub(e.lastUpdate) > 2*b.max {
		e.delay = b.initial
	} else {
		e.delay = min(2*e.delay, b.max)
	}
	e.lastUpdate = now
	b.entries[key] = e
	for k, o := range b.entries {
		if now.Sub(o.lastUpdate) > 2*b.max {
			delete(b.entries, k)
		}
	}
}

func (b *memBackoff) reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}
