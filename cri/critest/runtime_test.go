package critest

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestFakeAnswersAsRuntimes: a missing object is NotFound, lists are
// sorted by id, a sandbox's metadata is reserved, and a list error in
// force fails lists only.
func TestFakeAnswersAsRuntimes(t *testing.T) {
	rt := NewRuntime()
	ctx := t.Context()
	if _, err := rt.ContainerStatus(ctx, "nope", false); status.Code(err) != codes.NotFound {
		t.Errorf("ContainerStatus of a missing container: %v, want NotFound", err)
	}
	if _, err := rt.PodSandboxStatus(ctx, "nope", false); status.Code(err) != codes.NotFound {
		t.Errorf("PodSandboxStatus of a missing sandbox: %v, want NotFound", err)
	}
	for _, id := range []string{"c", "a", "b"} {
		rt.AddPodSandbox("u-"+id, id, 0, 1)
	}
	sbs, err := rt.ListPodSandbox(ctx, nil)
	if err != nil || len(sbs) != 3 || sbs[0].GetId() != "a" || sbs[2].GetId() != "c" {
		t.Errorf("ListPodSandbox %v, %v: want a, b, c", sbs, err)
	}
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}}
	if _, err := rt.RunPodSandbox(ctx, cfg, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunPodSandbox(ctx, cfg, ""); err == nil {
		t.Error("a second sandbox with the same metadata was created")
	}
	boom := errors.New("boom")
	rt.SetListErr(boom)
	if _, err := rt.ListContainers(ctx, nil); !errors.Is(err, boom) {
		t.Errorf("ListContainers with a list error: %v", err)
	}
	if rt.Calls("ListContainers") != 1 || rt.Calls("ListPodSandbox") != 1 {
		t.Errorf("calls: %d lists of containers, %d of sandboxes", rt.Calls("ListContainers"), rt.Calls("ListPodSandbox"))
	}
}

// TestFakeEventStream: Unimplemented by default; with EventsOffered a
// held event reaches the stream only when released, and FailStreams ends
// it with the error given.
func TestFakeEventStream(t *testing.T) {
	ctx := t.Context()
	if err := NewRuntime().GetContainerEvents(ctx, nil, nil); status.Code(err) != codes.Unimplemented {
		t.Fatalf("default mode: %v, want Unimplemented", err)
	}
	rt := NewRuntime().WithEvents(EventsOffered)
	rt.AddPodSandbox("u", "sb", 0, 1)
	rt.AddPodContainer("sb", "c1", "app", "h", 0, 2)
	ch := make(chan *runtimeapi.ContainerEventResponse, 1)
	established := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- rt.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(established) })
	}()
	<-established
	rt.HoldEvents(true)
	rt.Emit(rt.Event("c1", "sb", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, 3))
	select {
	case ev := <-ch:
		t.Fatalf("held event delivered: %v", ev)
	default:
	}
	rt.HoldEvents(false)
	ev := <-ch
	if ev.GetContainerId() != "c1" || len(ev.GetContainersStatuses()) != 1 || ev.GetPodSandboxStatus().GetId() != "sb" {
		t.Errorf("event %v", ev)
	}
	boom := status.Error(codes.Internal, "stream broke")
	rt.FailStreams(boom)
	if err := <-done; !errors.Is(err, boom) {
		t.Errorf("stream ended with %v, want %v", err, boom)
	}
	if rt.Streams() != 0 {
		t.Errorf("%d streams open after failure", rt.Streams())
	}
}

// TestFakeRecordsCallsAndInjectedErrors: every call is recorded in order,
// an injected error answers one call of its method, and a created
// container's config is kept; the answers are crisim's (a stopped
// container dies of SIGTERM).
func TestFakeRecordsCallsAndInjectedErrors(t *testing.T) {
	rt := NewRuntime()
	ctx := t.Context()
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}}
	boom := status.Error(codes.Internal, "boom")
	rt.InjectError("RunPodSandbox", boom)
	if _, err := rt.RunPodSandbox(ctx, cfg, ""); !errors.Is(err, boom) {
		t.Fatalf("RunPodSandbox with an injected error: %v", err)
	}
	sb, err := rt.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	ccfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
		Linux: &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{CpuShares: 7}}}
	id, err := rt.CreateContainer(ctx, sb, ccfg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.CreatedConfig(id).GetLinux().GetResources().GetCpuShares(); got != 7 {
		t.Errorf("recorded config's cpu shares %d, want 7", got)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := rt.StopContainer(ctx, id, 3); err != nil {
		t.Fatal(err)
	}
	st, err := rt.ContainerStatus(ctx, id, false)
	if err != nil || st.GetStatus().GetExitCode() != 143 {
		t.Errorf("stopped container %v %v, want exit code 143", st.GetStatus(), err)
	}
	want := []string{"RunPodSandbox", "RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "ContainerStatus"}
	if got := rt.GetCalls(); !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if got := rt.Stops(); len(got) != 1 || got[0] != (Stop{ID: id, Timeout: 3}) {
		t.Errorf("stops %v", got)
	}
}

// TestImagesAnswerAsCrisim: a given image is known, a pulled one becomes
// known, an injected error answers one pull, and every call is recorded.
func TestImagesAnswerAsCrisim(t *testing.T) {
	is := NewImages("busybox")
	ctx := t.Context()
	if st, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, false); err != nil || st.GetImage() == nil {
		t.Fatalf("ImageStatus of a given image: %v %v", st, err)
	}
	if st, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, false); err != nil || st.GetImage() != nil {
		t.Fatalf("ImageStatus of an absent image: %v %v, want none", st, err)
	}
	boom := errors.New("no registry")
	is.InjectError("PullImage", boom)
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, nil, nil); !errors.Is(err, boom) {
		t.Fatalf("PullImage with an injected error: %v", err)
	}
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if l, err := is.ListImages(ctx, nil); err != nil || len(l) != 2 {
		t.Errorf("images %v %v, want busybox and nginx", l, err)
	}
	want := []string{"ImageStatus", "ImageStatus", "PullImage", "PullImage", "ListImages"}
	if got := ImageCalls(is); !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}
