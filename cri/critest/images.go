package critest

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crisim"
)

// Images is the in-memory CRI image service: crisim's, driven in process
// as Runtime is, with the same record of calls and injected errors. A
// pull succeeds at once; an image is known once pulled or given to
// NewImages. The runtime takes any image a container names, so a test
// may use Images alone, or another image service.
type Images struct {
	recorder
	is runtimeapi.ImageServiceServer
}

// NewImages returns an image service holding images.
func NewImages(images ...string) *Images {
	sim, err := crisim.New(crisim.Options{Mode: crisim.ModeSimulated, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(fmt.Sprintf("critest: crisim.New: %v", err)) // cannot fail with these options
	}
	_, is := crisim.Services(sim)
	for _, name := range images {
		if _, err := is.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: name}}); err != nil {
			panic(fmt.Sprintf("critest: image %q: %v", name, err))
		}
	}
	return &Images{recorder: newRecorder(), is: is}
}

// ImageCalls returns the method names called on is, in call order.
func ImageCalls(is *Images) []string { return is.GetCalls() }

// ListImages answers as crisim does.
func (i *Images) ListImages(ctx context.Context, f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	resp, err := do(ctx, &i.recorder, "ListImages", i.is.ListImages, &runtimeapi.ListImagesRequest{Filter: f})
	return resp.GetImages(), err
}

// ImageStatus answers as crisim does: a nil image when it is absent.
func (i *Images) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return do(ctx, &i.recorder, "ImageStatus", i.is.ImageStatus, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
}

// PullImage pulls image at once and returns its id.
func (i *Images) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := do(ctx, &i.recorder, "PullImage", i.is.PullImage, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sb})
	return resp.GetImageRef(), err
}

// RemoveImage forgets image.
func (i *Images) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	_, err := do(ctx, &i.recorder, "RemoveImage", i.is.RemoveImage, &runtimeapi.RemoveImageRequest{Image: image})
	return err
}

// ImageFsInfo answers as crisim does.
func (i *Images) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return do(ctx, &i.recorder, "ImageFsInfo", i.is.ImageFsInfo, &runtimeapi.ImageFsInfoRequest{})
}

// Close does nothing: there is no connection.
func (i *Images) Close(context.Context) error { return nil }
