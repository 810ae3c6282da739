package crisim

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/internal/errgrpc"
)

// Register puts the runtime's CRI RuntimeService and ImageService on s.
func Register(s grpc.ServiceRegistrar, r *Runtime) {
	rs, is := Services(r)
	runtimeapi.RegisterRuntimeServiceServer(s, rs)
	runtimeapi.RegisterImageServiceServer(s, is)
}

// Services returns the runtime's CRI RuntimeService and ImageService as
// Register serves them: every error a gRPC status, every call counted.
// Called directly, they are the runtime's in-process face (cri/critest
// drives them so, with no socket and no gRPC). GetContainerEvents needs
// a gRPC stream; in process, call Runtime.GetContainerEvents.
func Services(r *Runtime) (runtimeapi.RuntimeServiceServer, runtimeapi.ImageServiceServer) {
	return &runtimeService{r: r}, &imageService{r: r}
}

// finish counts an operation and maps its error to a gRPC status.
func (r *Runtime) finish(op string, err error) error {
	err = errgrpc.ToGRPC(classify(err))
	r.metrics.operations.WithLabelValues(op, status.Code(err).String()).Inc()
	if err != nil {
		r.log.Debug("CRI call failed", "operation", op, "err", err)
	}
	return err
}

// runtimeService is the gRPC adapter of runtime.v1 RuntimeService; every
// method forwards to the Runtime. Calls not listed answer Unimplemented.
type runtimeService struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	r *Runtime
}

func (s *runtimeService) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	resp, err := s.r.Version(ctx, req)
	return resp, s.r.finish("Version", err)
}

func (s *runtimeService) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	resp, err := s.r.Status(ctx, req)
	return resp, s.r.finish("Status", err)
}

func (s *runtimeService) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	resp, err := s.r.RunPodSandbox(ctx, req)
	return resp, s.r.finish("RunPodSandbox", err)
}

func (s *runtimeService) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	resp, err := s.r.StopPodSandbox(ctx, req)
	return resp, s.r.finish("StopPodSandbox", err)
}

func (s *runtimeService) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	resp, err := s.r.RemovePodSandbox(ctx, req)
	return resp, s.r.finish("RemovePodSandbox", err)
}

func (s *runtimeService) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	resp, err := s.r.PodSandboxStatus(ctx, req)
	return resp, s.r.finish("PodSandboxStatus", err)
}

func (s *runtimeService) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	resp, err := s.r.ListPodSandbox(ctx, req)
	return resp, s.r.finish("ListPodSandbox", err)
}

func (s *runtimeService) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	resp, err := s.r.CreateContainer(ctx, req)
	return resp, s.r.finish("CreateContainer", err)
}

func (s *runtimeService) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	resp, err := s.r.StartContainer(ctx, req)
	return resp, s.r.finish("StartContainer", err)
}

func (s *runtimeService) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	resp, err := s.r.StopContainer(ctx, req)
	return resp, s.r.finish("StopContainer", err)
}

func (s *runtimeService) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	resp, err := s.r.RemoveContainer(ctx, req)
	return resp, s.r.finish("RemoveContainer", err)
}

func (s *runtimeService) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	resp, err := s.r.ListContainers(ctx, req)
	return resp, s.r.finish("ListContainers", err)
}

func (s *runtimeService) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	resp, err := s.r.ContainerStatus(ctx, req)
	return resp, s.r.finish("ContainerStatus", err)
}

func (s *runtimeService) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	resp, err := s.r.ExecSync(ctx, req)
	return resp, s.r.finish("ExecSync", err)
}

func (s *runtimeService) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	resp, err := s.r.ReopenContainerLog(ctx, req)
	return resp, s.r.finish("ReopenContainerLog", err)
}

func (s *runtimeService) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	resp, err := s.r.UpdateRuntimeConfig(ctx, req)
	return resp, s.r.finish("UpdateRuntimeConfig", err)
}

func (s *runtimeService) RuntimeConfig(ctx context.Context, req *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	resp, err := s.r.RuntimeConfig(ctx, req)
	return resp, s.r.finish("RuntimeConfig", err)
}

func (s *runtimeService) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	// The response headers go out once the subscription is in place, so a
	// client that waits for them (stream.Header()) misses no event.
	err := s.r.GetContainerEvents(stream.Context(), func() { _ = stream.SendHeader(metadata.MD{}) }, stream.Send)
	return s.r.finish("GetContainerEvents", err)
}

// imageService is the gRPC adapter of runtime.v1 ImageService.
type imageService struct {
	runtimeapi.UnimplementedImageServiceServer
	r *Runtime
}

func (s *imageService) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	resp, err := s.r.ListImages(ctx, req)
	return resp, s.r.finish("ListImages", err)
}

func (s *imageService) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	resp, err := s.r.ImageStatus(ctx, req)
	return resp, s.r.finish("ImageStatus", err)
}

func (s *imageService) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	resp, err := s.r.PullImage(ctx, req)
	return resp, s.r.finish("PullImage", err)
}

func (s *imageService) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	resp, err := s.r.RemoveImage(ctx, req)
	return resp, s.r.finish("RemoveImage", err)
}

func (s *imageService) ImageFsInfo(ctx context.Context, req *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	resp, err := s.r.ImageFsInfo(ctx, req)
	return resp, s.r.finish("ImageFsInfo", err)
}
