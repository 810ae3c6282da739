package pleg_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/crisim"
	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	"github.com/syncpod/syncpod/cri/listcodec"
	"github.com/syncpod/syncpod/pleg"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestEventedOnCrisim: the PLEG's own module tests against crisim, the CRI
// runtime beside the CRI edge (simulated mode, through the real CRI gRPC
// API and cri.Conn, evented mode required): a container that exits on its
// own (crisim's exit-after annotation) is a CONTAINER_DIED event whose
// status carries the exit code and the restart count the executor's
// annotation says.
func TestEventedOnCrisim(t *testing.T) {
	endpoint, _ := crisimtest.Start(t, crisim.Options{Mode: crisim.ModeSimulated})
	rs, is := crisimtest.Clients(t, endpoint)
	conn := cri.NewConn(endpoint, 10*time.Second, nil, cri.WithListCodec(listcodec.NewGRPC())) // as syncpod-pleg
	t.Cleanup(func() { _ = conn.Close() })
	p, err := pleg.New(pleg.Options{
		Runtime: conn.Observer(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry(),
		Evented: pleg.EventedOn, ListTimeout: 10 * time.Second, InspectTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()

	const uid = "uid-crisim"
	sub := p.Subscribe([]string{uid})
	defer sub.Close()
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	sb, err := rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: uid},
		LogDirectory: t.TempDir(),
		Labels:       map[string]string{crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid, crilabels.PodName: "web", crilabels.PodNamespace: "default"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "job"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}, LogPath: "job.log",
		Labels: map[string]string{crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid, crilabels.ContainerName: "job", crilabels.SpecHash: "h1"},
		Annotations: map[string]string{crilabels.RestartCount: "2",
			crisim.AnnotationExitAfter: "50ms", crisim.AnnotationExitCode: "3"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no CONTAINER_DIED of %s: %v (mode %v)", id, err, p.Mode())
		}
		if ev.GetType() != plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED || ev.GetContainerId() != id {
			continue
		}
		var c *syncpodv1.ObservedContainer
		for _, oc := range ev.GetObserved().GetContainers() {
			if oc.GetId() == id {
				c = oc
			}
		}
		if c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED || c.GetExitCode() != 3 || c.GetRestartCount() != 2 || c.GetSpecHash() != "h1" {
			t.Errorf("observed container %v, want exited with code 3, restart count 2, spec hash h1", c)
		}
		break
	}
}
