package cri

import (
	"context"
	"fmt"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
)

// Dial connects to the CRI endpoint (unix:///path) with the kubelet's
// remote clients and checks it answers Version within timeout. The
// returned services are not instrumented; wrap them with NewRuntime and
// NewImages.
func Dial(ctx context.Context, endpoint string, timeout time.Duration) (internalapi.RuntimeService, internalapi.ImageManagerService, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rs, err := remote.NewRemoteRuntimeService(ctx, endpoint, timeout, nil, false)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: runtime service %s: %w", ErrUnavailable, endpoint, err)
	}
	is, err := remote.NewRemoteImageService(ctx, endpoint, timeout, nil, false)
	if err != nil {
		_ = rs.Close(ctx)
		return nil, nil, fmt.Errorf("%w: image service %s: %w", ErrUnavailable, endpoint, err)
	}
	return rs, is, nil
}
