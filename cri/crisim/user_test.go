package crisim

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestProcessUser(t *testing.T) {
	sc := &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 1000},
		RunAsGroup: &runtimeapi.Int64Value{Value: 3000}, SupplementalGroups: []int64{2000, 4000}}
	if c := processUser(sc, 0); c == nil || c.UID != 1000 || c.GID != 3000 || len(c.Groups) != 2 || c.Groups[1] != 4000 {
		t.Errorf("as root: %+v", c)
	}
	if c := processUser(sc, 1000); c != nil {
		t.Errorf("not root: %+v, want nil (ignored)", c)
	}
	if c := processUser(&runtimeapi.LinuxContainerSecurityContext{}, 0); c != nil {
		t.Errorf("no user asked: %+v", c)
	}
	root := &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 0}}
	if c := processUser(root, 0); c != nil {
		t.Errorf("root asked of a root crisim: %+v, want nil (nothing to change)", c)
	}
}

// TestRunAsUserWhenRoot: crisim running as root starts the container's
// process, and its execs, as the user and groups the config asks for.
func TestRunAsUserWhenRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("crisim honours run_as_user only when it runs as root")
	}
	r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	sb := sandboxFor(t, r, "user")
	if _, err := r.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "who"}, Image: &runtimeapi.ImageSpec{Image: "img"}, LogPath: "who.log",
		Command: []string{"sh", "-c", "echo $(id -u) $(id -g) $(id -G); sleep 30"},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			RunAsUser: &runtimeapi.Int64Value{Value: 1000}, RunAsGroup: &runtimeapi.Int64Value{Value: 3000}, SupplementalGroups: []int64{4000}}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetContainerId()
	if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	out, err := r.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"id", "-u"}, Timeout: 10})
	if err != nil || strings.TrimSpace(string(out.GetStdout())) != "1000" {
		t.Errorf("exec id -u: %q %v", out.GetStdout(), err)
	}
	// The container's first line says who it is; wait for it, then stop.
	logPath := ""
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, err := r.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		logPath = st.GetStatus().GetLogPath()
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), " 1000 3000 3000 4000\n") {
		t.Errorf("container log %q, want uid 1000, gid 3000, groups 3000 4000", b)
	}
	if _, err := r.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 0}); err != nil {
		t.Fatal(err)
	}
	waitExited(t, r, id)
}
