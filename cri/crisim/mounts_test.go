package crisim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMountMapRewritesWholeContainerPaths(t *testing.T) {
	m := mountMap([]*runtimeapi.Mount{
		{ContainerPath: "/etc/config", HostPath: "/h/cfg"},
		{ContainerPath: "/etc/config/special/", HostPath: "/h/special"},
		{ContainerPath: "/cache", HostPath: "/h/cache"},
		{ContainerPath: "", HostPath: "/ignored"},
	})
	for _, tc := range []struct{ name, in, want string }{
		{"exact", "/cache", "/h/cache"},
		{"below", "/etc/config/app.conf", "/h/cfg/app.conf"},
		{"longest mount wins", "/etc/config/special/x", "/h/special/x"},
		{"inside a shell script", `cat /etc/config/a && echo hi > /cache/f; ls "/cache"`, `cat /h/cfg/a && echo hi > /h/cache/f; ls "/h/cache"`},
		{"after =", "--config=/etc/config/a", "--config=/h/cfg/a"},
		{"prefix of a longer name is not a match", "/cachex /etc/configs", "/cachex /etc/configs"},
		{"inside another path is not a match", "/var/cache/x", "/var/cache/x"},
		{"no paths", "echo hello", "echo hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mapPaths(tc.in, m); got != tc.want {
				t.Errorf("mapPaths(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	env := mapEnv([]string{"CONF=/etc/config/a", "PLAIN=x", "EMPTY="}, m)
	if env[0] != "CONF=/h/cfg/a" || env[1] != "PLAIN=x" || env[2] != "EMPTY=" {
		t.Errorf("mapEnv = %q", env)
	}
}

// A process container reads a mounted file and writes into a mounted
// directory through its mount map; the status reports the mounts.
func TestProcessContainerHonoursMountsThroughTheMountMap(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	sb := sandboxFor(t, r, "mounts")
	cfgDir, outDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "app.conf"), []byte("port=80"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "img"},
		Command: []string{"sh", "-c", `cat /etc/app/app.conf > /out/copy; echo "$CONF" >> /out/copy`},
		Envs:    []*runtimeapi.KeyValue{{Key: "CONF", Value: []byte("/etc/app/app.conf")}},
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/etc/app", HostPath: cfgDir, Readonly: true},
			{ContainerPath: "/out/", HostPath: outDir},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetContainerId()
	if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	st := waitExited(t, r, id)
	if st.GetExitCode() != 0 {
		t.Fatalf("exit %d", st.GetExitCode())
	}
	b, err := os.ReadFile(filepath.Join(outDir, "copy"))
	if err != nil || string(b) != "port=80"+filepath.Join(cfgDir, "app.conf")+"\n" {
		t.Fatalf("written through the map: %q %v", b, err)
	}
	if len(st.GetMounts()) != 2 || st.GetMounts()[0].GetContainerPath() != "/etc/app" || st.GetMounts()[1].GetHostPath() != outDir {
		t.Errorf("status mounts %v", st.GetMounts())
	}
}

// crisim refuses an image mount (its images have no content) with
// the mount's path and why, and creates nothing.
func TestImageMountIsRefused(t *testing.T) {
	r, _ := newTestRuntime(t, Options{Mode: ModeProcess})
	sb := sandboxFor(t, r, "imagemount")
	if _, err := r.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
		t.Fatal(err)
	}
	_, err := r.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "img"}, Command: []string{"true"},
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/etc/app", HostPath: t.TempDir()},
			{ContainerPath: "/mnt/tools", Image: &runtimeapi.ImageSpec{Image: "img"}, Readonly: true},
		}}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "config.mounts[1].image") || !strings.Contains(err.Error(), "cannot mount image volumes") {
		t.Fatalf("CreateContainer = %v, want the image mount refused as invalid with its path", err)
	}
	list, err := r.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	if err != nil || len(list.GetContainers()) != 0 {
		t.Errorf("containers after the refusal: %v, %v", list.GetContainers(), err)
	}
}
