package syncer

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

// The executor's streaming and stats calls, which the syncer never makes:
// the fake client answers them Unimplemented.

func (c execClient) ContainerLogs(context.Context, *executorv1.ContainerLogsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[executorv1.ContainerLogsResponse], error) {
	return nil, status.Error(codes.Unimplemented, "ContainerLogs")
}

func (c execClient) Exec(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[executorv1.ExecRequest, executorv1.ExecResponse], error) {
	return nil, status.Error(codes.Unimplemented, "Exec")
}

func (c execClient) Attach(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[executorv1.AttachRequest, executorv1.AttachResponse], error) {
	return nil, status.Error(codes.Unimplemented, "Attach")
}

func (c execClient) PortForward(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[executorv1.PortForwardRequest, executorv1.PortForwardResponse], error) {
	return nil, status.Error(codes.Unimplemented, "PortForward")
}

func (c execClient) ListPodStats(context.Context, *executorv1.ListPodStatsRequest, ...grpc.CallOption) (*executorv1.ListPodStatsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "ListPodStats")
}
