package node

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// onePodPlanner is a planner holding one pod: it records what is applied
// and deleted.
type onePodPlanner struct {
	plannerv1.PlannerServiceClient
	rec   *plannerv1.PodRecord
	calls []string
}

func (f *onePodPlanner) GetPod(context.Context, *plannerv1.GetPodRequest, ...grpc.CallOption) (*plannerv1.GetPodResponse, error) {
	return &plannerv1.GetPodResponse{Record: proto.Clone(f.rec).(*plannerv1.PodRecord)}, nil
}

func (f *onePodPlanner) ApplyPod(_ context.Context, r *plannerv1.ApplyPodRequest, _ ...grpc.CallOption) (*plannerv1.ApplyPodResponse, error) {
	f.calls = append(f.calls, "apply")
	p := proto.Clone(r.GetPod()).(*syncpodv1.Pod)
	p.Generation = f.rec.GetPod().GetGeneration()
	f.rec.Pod = p
	return &plannerv1.ApplyPodResponse{Pod: p, Result: plannerv1.ApplyResult_APPLY_RESULT_UPDATED}, nil
}

func (f *onePodPlanner) DeletePod(context.Context, *plannerv1.DeletePodRequest, ...grpc.CallOption) (*plannerv1.DeletePodResponse, error) {
	f.calls = append(f.calls, "delete")
	f.rec.Pod.DeletionTime = timestamppb.Now()
	return &plannerv1.DeletePodResponse{Pod: f.rec.GetPod()}, nil
}

// TestGracefulDeletionCarriesItsGeneration. The API server bumps
// the generation of a pod it deletes gracefully; the pod the planner stops
// carries that generation first (spec untouched), so the terminating pod's
// status reports it, as the kubelet's does.
func TestGracefulDeletionCarriesItsGeneration(t *testing.T) {
	kp := tokenlessAPIPod()
	sp := &syncpodv1.Pod{Uid: string(kp.UID), Name: kp.Name, Namespace: kp.Namespace, Generation: 4, SourceGeneration: 1,
		Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox:1.36"}}}}
	planner := &onePodPlanner{rec: &plannerv1.PodRecord{Pod: sp}}
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{o: Options{Planner: planner, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, m: m}

	now := metav1.NewTime(time.Now())
	kp.DeletionTimestamp, kp.DeletionGracePeriodSeconds, kp.Generation = &now, new(int64(60)), 2
	if err := a.terminate(context.Background(), kp); err != nil {
		t.Fatal(err)
	}
	got := planner.rec.GetPod()
	if len(planner.calls) != 2 || planner.calls[0] != "apply" || planner.calls[1] != "delete" {
		t.Fatalf("planner calls %v, want apply then delete", planner.calls)
	}
	if got.GetSourceGeneration() != 2 || !proto.Equal(got.GetSpec(), sp.GetSpec()) {
		t.Errorf("planner pod: source generation %d, spec %v; want 2 and the spec unchanged", got.GetSourceGeneration(), got.GetSpec())
	}

	// Terminating already: nothing more is applied.
	planner.calls = nil
	if err := a.terminate(context.Background(), kp); err != nil {
		t.Fatal(err)
	}
	if len(planner.calls) != 0 {
		t.Errorf("planner calls %v for a pod already terminating, want none", planner.calls)
	}
}
