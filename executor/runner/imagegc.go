package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/runtimeclient"
)

// RemoveUnusedImages removes every image that no container of the runtime
// uses, in any state (as its image or as an image volume it mounts), and
// that the runtime does not pin (its sandbox
// image), as the kubelet's image garbage collector does when the eviction
// manager reclaims disk. It returns the ids removed and the bytes
// they held; an image that cannot be removed is reported in the error and
// the others are still removed.
func (r *Runner) RemoveUnusedImages(ctx context.Context) (removed []string, freed uint64, err error) {
	containers, err := r.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return nil, 0, fmt.Errorf("list containers: %w", err)
	}
	images, err := r.img.ListImages(ctx, &runtimeapi.ImageFilter{})
	if err != nil {
		return nil, 0, fmt.Errorf("list images: %w", err)
	}
	used := map[string]bool{}
	for _, c := range containers {
		for _, ref := range []string{c.GetImageRef(), c.GetImage().GetImage(), c.GetImage().GetUserSpecifiedImage(), c.GetImageId()} {
			if ref != "" {
				used[ref] = true
			}
		}
		// an image a container mounts as a volume is in use, as
		// the kubelet's collector finds it in the container's status.
		st, err := r.rt.ContainerStatus(ctx, c.GetId(), false)
		if err := runtimeclient.IgnoreNotFound(err); err != nil {
			return nil, 0, fmt.Errorf("read the mounts of container %s: %w", c.GetId(), err)
		}
		for _, m := range st.GetStatus().GetMounts() {
			if ref := m.GetImage().GetImage(); ref != "" {
				used[ref] = true
			}
		}
	}
	var errs []error
	for _, img := range unusedImages(images, used) {
		if err := r.img.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: img.GetId()}); err != nil {
			errs = append(errs, fmt.Errorf("remove image %s: %w", img.GetId(), err))
			continue
		}
		removed = append(removed, img.GetId())
		freed += img.GetSize()
	}
	return removed, freed, errors.Join(errs...)
}

// unusedImages are the images of images that are not pinned and whose id,
// tags and digests are none of used.
func unusedImages(images []*runtimeapi.Image, used map[string]bool) []*runtimeapi.Image {
	var out []*runtimeapi.Image
	for _, img := range images {
		names := append([]string{img.GetId()}, img.GetRepoTags()...)
		names = append(names, img.GetRepoDigests()...)
		if img.GetPinned() || slices.ContainsFunc(names, func(n string) bool { return used[n] }) {
			continue
		}
		out = append(out, img)
	}
	return out
}
