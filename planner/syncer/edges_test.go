package syncer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/planner/podsync"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// recordingPLEGClient answers GetPodStatus and records the request; the
// embedded interface is nil, so any other call panics.
type recordingPLEGClient struct {
	plegv1.PlegServiceClient
	got *plegv1.GetPodStatusRequest
}

func (c *recordingPLEGClient) GetPodStatus(_ context.Context, in *plegv1.GetPodStatusRequest, _ ...grpc.CallOption) (*plegv1.GetPodStatusResponse, error) {
	c.got = in
	return &plegv1.GetPodStatusResponse{Observed: &syncpodv1.ObservedPod{Uid: in.GetPodUid()}}, nil
}

func TestGRPCPLEGSendsNewerThanOnlyWhenSet(t *testing.T) {
	c := &recordingPLEGClient{}
	p := GRPCPLEG(c)
	if o, err := p.PodStatus(context.Background(), "u1", time.Time{}); err != nil || o.GetUid() != "u1" || c.got.GetNewerThan() != nil {
		t.Errorf("zero newerThan: observed %v, err %v, request %v; want no newer_than", o, err, c.got)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := p.PodStatus(context.Background(), "u1", at); err != nil || !c.got.GetNewerThan().AsTime().Equal(at) {
		t.Errorf("newer_than = %v, err %v; want %v", c.got.GetNewerThan(), err, at)
	}
}

// recordingExecutorClient answers RemoveResources and ExecSync.
type recordingExecutorClient struct {
	executorv1.ExecutorServiceClient
	removed *executorv1.RemoveResourcesRequest
	execErr error
}

func (c *recordingExecutorClient) RemoveResources(_ context.Context, in *executorv1.RemoveResourcesRequest, _ ...grpc.CallOption) (*executorv1.RemoveResourcesResponse, error) {
	c.removed = in
	return &executorv1.RemoveResourcesResponse{Results: []*executorv1.RemoveResult{{Id: "c1", Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED}}}, nil
}

func (c *recordingExecutorClient) ExecSync(context.Context, *executorv1.ExecSyncRequest, ...grpc.CallOption) (*executorv1.ExecSyncResponse, error) {
	if c.execErr != nil {
		return nil, c.execErr
	}
	return &executorv1.ExecSyncResponse{ExitCode: 3}, nil
}

func TestGRPCExecutorMapsRemovalsAndProbeTimeouts(t *testing.T) {
	c := &recordingExecutorClient{}
	e := GRPCExecutor(c)
	res, err := e.RemoveResources(context.Background(), podsync.Removal{Containers: []string{"c1"}, Sandboxes: []string{"s1"}})
	if err != nil || len(res) != 1 || !slices.Equal(c.removed.GetContainerIds(), []string{"c1"}) || !slices.Equal(c.removed.GetSandboxIds(), []string{"s1"}) {
		t.Errorf("RemoveResources: results %v, err %v, request %v", res, err, c.removed)
	}
	if code, err := e.ExecSync(context.Background(), "c1", []string{"true"}, time.Second); err != nil || code != 3 {
		t.Errorf("ExecSync = %d, %v; want 3, nil", code, err)
	}
	c.execErr = status.Error(codes.DeadlineExceeded, "probe timed out")
	if _, err := e.ExecSync(context.Background(), "c1", []string{"true"}, time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ExecSync on a deadline = %v, want context.DeadlineExceeded (the prober's timeout)", err)
	}
}
