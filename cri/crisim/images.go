package crisim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeImageSize is the size every image reports, in bytes.
const fakeImageSize = 1 << 20

// image is a pulled image: only a name.
type image struct {
	id   string
	name string
}

func imageID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (img *image) toCRI() *runtimeapi.Image {
	return &runtimeapi.Image{
		Id:          img.id,
		RepoTags:    []string{img.name},
		RepoDigests: []string{img.name + "@" + img.id},
		Size:        fakeImageSize,
		Spec:        &runtimeapi.ImageSpec{Image: img.name},
	}
}

// lookupImageLocked finds an image by name or id; mu must be held.
func (r *Runtime) lookupImageLocked(ref string) *image {
	if img, ok := r.images[ref]; ok {
		return img
	}
	for _, img := range r.images {
		if img.id == ref {
			return img
		}
	}
	return nil
}

// PullImage "pulls" a name at once, unless it matches the unpullable
// pattern.
func (r *Runtime) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	name := req.GetImage().GetImage()
	if name == "" {
		return nil, required("image.image")
	}
	if p := r.opts.Unpullable; p != nil && p.MatchString(name) {
		r.metrics.pulls.WithLabelValues("failed").Inc()
		return nil, fmt.Errorf("%w: pull %q: it matches the unpullable pattern %q", ErrPullFailed, name, p.String())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	img, ok := r.images[name]
	if !ok {
		img = &image{id: imageID(name), name: name}
		r.images[name] = img
		if err := r.saveImagesLocked(); err != nil {
			delete(r.images, name)
			return nil, err
		}
	}
	r.metrics.pulls.WithLabelValues("pulled").Inc()
	return &runtimeapi.PullImageResponse{ImageRef: img.id}, nil
}

// ImageStatus reports an image, or a nil image when it is absent.
func (r *Runtime) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img := r.lookupImageLocked(req.GetImage().GetImage())
	if img == nil {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: img.toCRI()}, nil
}

// ListImages lists images, by name order; a filter selects one name.
func (r *Runtime) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	want := req.GetFilter().GetImage().GetImage()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Image
	for _, img := range r.images {
		if want == "" || img.name == want || img.id == want {
			out = append(out, img.toCRI())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RepoTags[0] < out[j].RepoTags[0] })
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// RemoveImage forgets an image; removing an absent image is fine.
func (r *Runtime) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if img := r.lookupImageLocked(req.GetImage().GetImage()); img != nil {
		delete(r.images, img.name)
		if err := r.saveImagesLocked(); err != nil {
			r.images[img.name] = img
			return nil, err
		}
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// saveImagesLocked writes the image names, when there is a state dir; mu
// must be held.
func (r *Runtime) saveImagesLocked() error {
	if r.store == nil {
		return nil
	}
	names := make([]string, 0, len(r.images))
	for n := range r.images {
		names = append(names, n)
	}
	sort.Strings(names)
	return r.store.putJSON("images.json", names)
}

// ImageFsInfo reports a made-up image filesystem holding the images.
func (r *Runtime) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	r.mu.Lock()
	n := uint64(len(r.images))
	r.mu.Unlock()
	fs := &runtimeapi.FilesystemUsage{
		Timestamp:  r.nowNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: "/syncpod-crisim/images"},
		UsedBytes:  &runtimeapi.UInt64Value{Value: n * fakeImageSize},
		InodesUsed: &runtimeapi.UInt64Value{Value: n},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}, ContainerFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}
