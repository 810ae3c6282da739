package runner

import (
	"context"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
)

// the unused images are those no container names by id, tag or
// digest, and that the runtime does not pin.
func TestUnusedImages(t *testing.T) {
	images := []*runtimeapi.Image{
		{Id: "sha256:pause", RepoTags: []string{"pause:3.10"}, Pinned: true},
		{Id: "sha256:busybox", RepoTags: []string{"busybox:1.36"}},
		{Id: "sha256:nginx", RepoDigests: []string{"nginx@sha256:abc"}},
		{Id: "sha256:redis", RepoTags: []string{"redis:7"}},
		{Id: "sha256:old", RepoTags: []string{"old:1"}},
	}
	for _, tc := range []struct {
		name string
		used []string
		want []string
	}{
		{"nothing used: all but the pinned one", nil, []string{"sha256:busybox", "sha256:nginx", "sha256:redis", "sha256:old"}},
		{"used by tag, by digest, by id", []string{"busybox:1.36", "nginx@sha256:abc", "sha256:redis"}, []string{"sha256:old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			used := map[string]bool{}
			for _, u := range tc.used {
				used[u] = true
			}
			var got []string
			for _, img := range unusedImages(images, used) {
				got = append(got, img.GetId())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("unused %v, want %v", got, tc.want)
			}
		})
	}
}

// an image an exited container still names is kept, the others
// go.
func TestRemoveUnusedImagesKeepsWhatContainersUse(t *testing.T) {
	e := newEnv(t, busybox, "nginx:1.27", "redis:7")
	ctx := context.Background()
	sb, err := e.rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "u", Namespace: "default"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image: &runtimeapi.ImageSpec{Image: busybox}}, &runtimeapi.PodSandboxConfig{}); err != nil {
		t.Fatal(err)
	}
	removed, _, err := e.r.RemoveUnusedImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	left, err := e.img.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, img := range left {
		tags = append(tags, img.GetRepoTags()...)
	}
	if len(removed) != 2 || !slices.Contains(tags, busybox) || len(left) != 1 {
		t.Errorf("removed %v, left %v; want nginx and redis removed, busybox kept", removed, tags)
	}
}

// mountingRuntime reports every container as mounting image as a volume,
// as a runtime with image volumes does in its container status.
type mountingRuntime struct {
	*critest.Runtime
	image string
}

func (r *mountingRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	st, err := r.Runtime.ContainerStatus(ctx, id, verbose)
	if err == nil {
		st.Status.Mounts = append(st.Status.Mounts, &runtimeapi.Mount{ContainerPath: "/mnt/tools", Readonly: true,
			Image: &runtimeapi.ImageSpec{Image: r.image}})
	}
	return st, err
}

// an image a container mounts as an image volume is in use and
// stays, as the kubelet's image collector keeps it.
func TestRemoveUnusedImagesKeepsImageVolumes(t *testing.T) {
	img := critest.NewImages(busybox, "tools:1", "redis:7")
	ctx := context.Background()
	st, err := img.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "tools:1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	rt := &mountingRuntime{Runtime: critest.NewRuntime(), image: st.GetImage().GetId()}
	r := volumeRunner(t, rt, img, t.TempDir(), Config{})
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "u", Namespace: "default"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image: &runtimeapi.ImageSpec{Image: busybox}}, &runtimeapi.PodSandboxConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.RemoveUnusedImages(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := img.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, i := range left {
		tags = append(tags, i.GetRepoTags()...)
	}
	slices.Sort(tags)
	if !slices.Equal(tags, []string{busybox, "tools:1"}) {
		t.Errorf("left %v, want busybox (the container's) and tools:1 (its image volume)", tags)
	}
}
