package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/pleg"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// envMode is the PLEG mode the test containerd must give: "relist" on
// Debian's containerd 1.6, "evented" on 2.x (unset: not checked).
const envMode = "SYNCPOD_TEST_CONTAINERD_PLEG_MODE"

func call(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), time.Minute)
}

// TestContainerdDiedEventAndHealth: a host-network busybox container that
// exits produces CONTAINER_DIED on a Watch stream and GetPodStatus shows its
// exit code and finish time; cutting the runtime socket (a proxy in front
// of containerd, so the shared containerd keeps running for other tests)
// turns health NOT_SERVING after the threshold, and restoring it recovers.
func TestContainerdDiedEventAndHealth(t *testing.T) {
	cd := critest.RequireContainerd(t)
	rs, busybox := cd.Runtime, cd.Busybox
	sock := strings.TrimPrefix(cd.Endpoint, "unix://")

	// Short socket path: unix socket paths are limited to ~108 bytes.
	dir, err := os.MkdirTemp("", "plegct")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	px := newProxy(t, filepath.Join(dir, "cri.sock"), sock)

	const period, threshold = time.Second, 3 * time.Second
	criConn := cri.NewConn("unix://"+px.path, 5*time.Second, nil)
	t.Cleanup(func() { _ = criConn.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	p, err := pleg.New(pleg.Options{
		Runtime: criConn.Observer(), Logger: logger, Registry: prometheus.NewRegistry(),
		RelistPeriod: period, RelistThreshold: threshold, ListTimeout: 5 * time.Second, InspectTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- p.Run(ctx) }()

	// gRPC: the PLEG service and a health server driven by RunHealth.
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	plegv1.RegisterPlegServiceServer(srv, New(p))
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	healthDone := make(chan error, 1)
	go func() {
		healthDone <- p.RunHealth(ctx, 100*time.Millisecond, func(ok bool) {
			st := healthpb.HealthCheckResponse_SERVING
			if !ok {
				st = healthpb.HealthCheckResponse_NOT_SERVING
			}
			hs.SetServingStatus("", st)
		})
	}()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := plegv1.NewPlegServiceClient(conn)
	hc := healthpb.NewHealthClient(conn)

	// A host-network pod labelled as the executor labels it.
	name := fmt.Sprintf("pleg-died-%d", time.Now().UnixNano())
	uid := "uid-" + name
	labels := map[string]string{crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid, crilabels.PodName: name, crilabels.PodNamespace: "syncpod-test"}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "syncpod-test", Uid: uid},
		LogDirectory: t.TempDir(),
		Labels:       labels,
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	watch, err := client.Watch(wctx, &plegv1.WatchRequest{PodUids: []string{uid}, IncludeStatus: true})
	if err != nil {
		t.Fatal(err)
	}
	c1, c1cancel := call(t)
	sbID, err := rs.RunPodSandbox(c1, sbCfg, "")
	c1cancel()
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = rs.StopPodSandbox(c, sbID)
		_ = rs.RemovePodSandbox(c, sbID)
	})
	cLabels := map[string]string{crilabels.Managed: crilabels.ManagedValue, crilabels.PodUID: uid, crilabels.ContainerName: "exiter", crilabels.SpecHash: "spec-1"}
	c2, c2cancel := call(t)
	cID, err := rs.CreateContainer(c2, sbID, &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: "exiter"},
		Image:       &runtimeapi.ImageSpec{Image: busybox},
		Command:     []string{"sh", "-c", "sleep 1; exit 3"},
		LogPath:     "exiter.log",
		Labels:      cLabels,
		Annotations: map[string]string{crilabels.RestartCount: "4"},
	}, sbCfg)
	if err == nil {
		err = rs.StartContainer(c2, cID)
	}
	c2cancel()
	if err != nil {
		t.Fatalf("create/start container: %v", err)
	}

	var died *plegv1.PodLifecycleEvent
	for died == nil {
		r, err := watch.Recv()
		if err != nil {
			t.Fatalf("watch: %v (no CONTAINER_DIED for %s)", err, cID)
		}
		ev := r.GetEvent()
		t.Logf("event %s %s", ev.GetType(), ev.GetContainerId())
		if ev.GetType() == plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED && ev.GetContainerId() == cID {
			died = ev
		}
	}
	if died.GetObserved() == nil {
		t.Error("include_status: no status on the event")
	}
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := client.GetPodStatus(sctx, &plegv1.GetPodStatusRequest{PodUid: uid, NewerThan: died.GetTime()})
	scancel()
	if err != nil {
		t.Fatalf("GetPodStatus: %v", err)
	}
	obs := resp.GetObserved()
	var found bool
	for _, c := range obs.GetContainers() {
		if c.GetId() != cID {
			continue
		}
		found = true
		if c.GetExitCode() != 3 || c.GetFinishedAt() == nil || c.GetSpecHash() != "spec-1" || c.GetRestartCount() != 4 || c.GetName() != "exiter" || c.GetSandboxId() != sbID {
			t.Errorf("container status %v", c)
		}
	}
	if !found || len(obs.GetSandboxes()) != 1 || !obs.GetSandboxes()[0].GetHostNetwork() || obs.GetName() != name {
		t.Errorf("pod status %v", obs)
	}
	list, err := client.ListPodStatuses(ctx, &plegv1.ListPodStatusesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PLEG mode against this containerd: %s", list.GetMode())
	wantMode := map[string]plegv1.PlegMode{"relist": plegv1.PlegMode_PLEG_MODE_RELIST, "evented": plegv1.PlegMode_PLEG_MODE_EVENTED}
	if w := os.Getenv(envMode); w != "" {
		if want, ok := wantMode[w]; !ok {
			t.Errorf("%s=%q: want relist or evented", envMode, w)
		} else if list.GetMode() != want {
			t.Errorf("PLEG mode on this containerd = %s, want %s (%s)", list.GetMode(), want, envMode)
		}
	}

	// Health: cut the runtime, wait for NOT_SERVING, restore, wait for SERVING.
	waitHealth := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			if err == nil && r.GetStatus() == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("health not %s within 60s: %v %v", want, r.GetStatus(), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitHealth(healthpb.HealthCheckResponse_SERVING)
	px.cut()
	waitHealth(healthpb.HealthCheckResponse_NOT_SERVING)
	px.restore()
	waitHealth(healthpb.HealthCheckResponse_SERVING)

	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	<-healthDone
}
