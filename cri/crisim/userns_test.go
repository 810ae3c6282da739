package crisim

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/internal/errgrpc"
)

// TestUserNamespacesAreRefused: crisim runs containers as host processes,
// so its handler says it does not run user namespaces (the kubelet and
// the executor then refuse the pod, R-27.3), and a sandbox asking for one
// anyway is refused with a message saying where to run it. Only the
// simulated runtime of the tests may pretend to run them.
func TestUserNamespacesAreRefused(t *testing.T) {
	podUserns := &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
		Uids: []*runtimeapi.IDMapping{{HostId: 65536, Length: 65536}}, Gids: []*runtimeapi.IDMapping{{HostId: 65536, Length: 65536}}}}
	run := func(r *Runtime) error {
		_, err := r.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}, LogDirectory: t.TempDir(),
			Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: podUserns}}}})
		return err
	}
	supports := func(r *Runtime) bool {
		st, err := r.Status(context.Background(), &runtimeapi.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return st.GetRuntimeHandlers()[0].GetFeatures().GetUserNamespaces()
	}

	r, _ := newTestRuntime(t, Options{Mode: ModeSimulated})
	if supports(r) {
		t.Error("crisim says it runs user namespaces")
	}
	err := run(r)
	if status.Code(errgrpc.ToGRPC(err)) != codes.InvalidArgument || !strings.Contains(err.Error(), "POD is not supported: crisim runs containers as host processes") {
		t.Errorf("sandbox in its own user namespace: %v", err)
	}

	sim, _ := newTestRuntime(t, Options{Mode: ModeSimulated, UserNamespaces: true})
	if !supports(sim) {
		t.Error("the simulated runtime asked to run user namespaces says it does not")
	}
	if err := run(sim); err != nil {
		t.Errorf("simulated runtime: %v", err)
	}
	if (&Runtime{opts: Options{Mode: ModeProcess, UserNamespaces: true}}).userNamespaces() {
		t.Error("a process-mode crisim would run user namespaces")
	}
}
