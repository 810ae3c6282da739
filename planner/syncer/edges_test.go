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
	"github.com/syncpod/syncpod/planner/prober"
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
	return &executorv1.ExecSyncResponse{ExitCode: 3, Stdout: []byte("out "), Stderr: []byte("err")}, nil
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
	// The prober's Unhealthy events carry the probe's output: the adapter
	// must give it (a prober.OutputExecer), stdout then stderr.
	oe, ok := e.(prober.OutputExecer)
	if !ok {
		t.Fatal("GRPCExecutor is not a prober.OutputExecer: Unhealthy events would lose the probe's output")
	}
	if code, out, err := oe.ExecSyncOutput(context.Background(), "c1", []string{"true"}, time.Second); err != nil || code != 3 || string(out) != "out err" {
		t.Errorf("ExecSyncOutput = %d, %q, %v; want 3, \"out err\", nil", code, out, err)
	}
	c.execErr = status.Error(codes.DeadlineExceeded, "probe timed out")
	if _, err := e.ExecSync(context.Background(), "c1", []string{"true"}, time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ExecSync on a deadline = %v, want context.DeadlineExceeded (the prober's timeout)", err)
	}
}

// volumeExecutorClient records the config and volume requests.
type volumeExecutorClient struct {
	executorv1.ExecutorServiceClient
	applied *executorv1.ApplyActionsRequest
	updated *executorv1.UpdatePodVolumesRequest
	removed *executorv1.RemovePodVolumesRequest
}

func (c *volumeExecutorClient) ApplyActions(_ context.Context, in *executorv1.ApplyActionsRequest, _ ...grpc.CallOption) (*executorv1.ApplyActionsResponse, error) {
	c.applied = in
	return &executorv1.ApplyActionsResponse{}, nil
}

func (c *volumeExecutorClient) UpdatePodVolumes(_ context.Context, in *executorv1.UpdatePodVolumesRequest, _ ...grpc.CallOption) (*executorv1.UpdatePodVolumesResponse, error) {
	c.updated = in
	return &executorv1.UpdatePodVolumesResponse{Updated: []string{"config"}, Errors: []string{"creds: secret gone"}}, nil
}

func (c *volumeExecutorClient) RemovePodVolumes(_ context.Context, in *executorv1.RemovePodVolumesRequest, _ ...grpc.CallOption) (*executorv1.RemovePodVolumesResponse, error) {
	c.removed = in
	return &executorv1.RemovePodVolumesResponse{}, nil
}

func TestGRPCExecutorSendsConfigObjectsAndVolumeRequests(t *testing.T) {
	c := &volumeExecutorClient{}
	e := GRPCExecutor(c)
	ctx := context.Background()
	pod := &syncpodv1.Pod{Uid: "u1"}
	cfg := Config{ConfigMaps: []*syncpodv1.ConfigMap{{Name: "cfg"}}, Secrets: []*syncpodv1.Secret{{Name: "creds"}}}
	if _, err := e.ApplyActions(ctx, pod, nil, &syncpodv1.PodActions{}, cfg); err != nil ||
		c.applied.GetConfigMaps()[0].GetName() != "cfg" || c.applied.GetSecrets()[0].GetName() != "creds" {
		t.Errorf("ApplyActions: err %v, request %v; want the config objects sent", err, c.applied)
	}
	updated, errs, err := e.UpdatePodVolumes(ctx, pod, cfg)
	if err != nil || !slices.Equal(updated, []string{"config"}) || !slices.Equal(errs, []string{"creds: secret gone"}) ||
		c.updated.GetPod().GetUid() != "u1" || c.updated.GetConfigMaps()[0].GetName() != "cfg" || c.updated.GetSecrets()[0].GetName() != "creds" {
		t.Errorf("UpdatePodVolumes = %v, %v, %v; request %v", updated, errs, err, c.updated)
	}
	if err := e.RemovePodVolumes(ctx, "u1"); err != nil || c.removed.GetPodUid() != "u1" {
		t.Errorf("RemovePodVolumes: err %v, request %v", err, c.removed)
	}
}
