package crisim

import (
	"context"
	"errors"
	"os"
	"os/user"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestProcessUser(t *testing.T) {
	passwd := func(name string) (*user.User, error) {
		if name == "app" {
			return &user.User{Username: "app", Uid: "1500", Gid: "1600"}, nil
		}
		return nil, user.UnknownUserError(name)
	}
	sc := &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 1000},
		RunAsGroup: &runtimeapi.Int64Value{Value: 3000}, SupplementalGroups: []int64{2000, 4000}}
	for _, tc := range []struct {
		name string
		sc   *runtimeapi.LinuxContainerSecurityContext
		euid int
		want *processCred
	}{
		{name: "as root", sc: sc, want: &processCred{UID: 1000, GID: 3000, Groups: []uint32{2000, 4000}}},
		{name: "not root: ignored", sc: sc, euid: 1000},
		{name: "no user asked", sc: &runtimeapi.LinuxContainerSecurityContext{}},
		{name: "root asked of a root crisim: nothing to change", sc: &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 0}}},
		{name: "a user by name: its uid and group", sc: &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "app"},
			want: &processCred{UID: 1500, GID: 1600}},
		{name: "a user by name and a group", sc: &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "app", RunAsGroup: &runtimeapi.Int64Value{Value: 7}},
			want: &processCred{UID: 1500, GID: 7}},
		{name: "groups alone: added to the default user, root", sc: &runtimeapi.LinuxContainerSecurityContext{SupplementalGroups: []int64{1234, 5678}},
			want: &processCred{Groups: []uint32{1234, 5678}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := processUser(tc.sc, tc.euid, passwd)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("processUser: %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
	_, err := processUser(&runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "nosuch"}, 0, passwd)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "run_as_username") || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("an unknown user name: %v, want InvalidArgument naming the field and the user", err)
	}
}

// crisim running as root runs the process of a container that names its
// user by name (looked up in /etc/passwd) as that user, and adds the
// supplemental groups of one that names no user to crisim's own.
func TestRunAsUsernameAndGroupsWhenRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("crisim honours the container's user only when it runs as root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody on this host: %v", err)
	}
	r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	sb := sandboxFor(t, r, "byname")
	ctx := context.Background()
	if _, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
		t.Fatal(err)
	}
	run := func(name string, sc *runtimeapi.LinuxContainerSecurityContext, cmd ...string) string {
		t.Helper()
		resp, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "img"},
			Command: []string{"sleep", "30"}, Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: sc}}})
		if err != nil {
			t.Fatal(err)
		}
		id := resp.GetContainerId()
		if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
		out, err := r.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 10})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out.GetStdout()))
	}
	if got := run("nobody", &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "nobody"}, "id", "-u"); got != nobody.Uid {
		t.Errorf("run_as_username nobody: id -u %q, want %s", got, nobody.Uid)
	}
	groups := strings.Fields(run("groups", &runtimeapi.LinuxContainerSecurityContext{SupplementalGroups: []int64{1234, 5678}}, "id", "-G"))
	if !slices.Contains(groups, "1234") || !slices.Contains(groups, "5678") {
		t.Errorf("supplemental groups without a user: id -G %q, want 1234 and 5678 among them", groups)
	}
	_, err = r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "nosuch"}, Image: &runtimeapi.ImageSpec{Image: "img"}, Command: []string{"true"},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "no-such-user-here"}}}})
	if status.Code(grpcError(err)) != codes.InvalidArgument {
		t.Errorf("an unknown user name: %v, want InvalidArgument", err)
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
