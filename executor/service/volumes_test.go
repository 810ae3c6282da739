package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/executor/volumes"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func newVolumeClient(t *testing.T) (executorv1.ExecutorServiceClient, *volumes.Manager) {
	t.Helper()
	vm, err := volumes.New(volumes.Options{Root: t.TempDir(), NoTmpfs: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := serveExecutor(t, critest.NewRuntime(), nil, vm)
	return c, vm
}

func badFields(t *testing.T, err error) []string {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("code %v (%v), want InvalidArgument", st.Code(), err)
	}
	var got []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				got = append(got, v.GetField())
			}
		}
	}
	return got
}

func volumePod() *syncpodv1.Pod {
	p := goodPod()
	p.Namespace = "shop"
	p.Spec.InitContainers = nil
	p.Spec.Volumes = []*syncpodv1.Volume{{Name: "config", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "cfg"}}}}
	p.Spec.Containers[0].VolumeMounts = []*syncpodv1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}
	return p
}

func TestVolumesThroughTheExecutorService(t *testing.T) {
	c, vm := newVolumeClient(t)
	ctx := context.Background()
	cm := &syncpodv1.ConfigMap{Name: "cfg", Namespace: "shop", Data: map[string]string{"app.conf": "v1"}}

	// Missing ConfigMap: the start fails with the kubelet's reason.
	resp, err := c.ApplyActions(ctx, &executorv1.ApplyActionsRequest{Pod: volumePod(),
		Actions: &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: []*syncpodv1.ContainerStart{{Name: "web", SpecHash: "h"}}}})
	if err != nil {
		t.Fatal(err)
	}
	last := resp.GetSteps()[len(resp.GetSteps())-1]
	if last.GetReason() != "CreateContainerConfigError" || !strings.HasPrefix(last.GetMessage(), `MountVolume.SetUp failed for volume "config"`) {
		t.Fatalf("start without the configmap: %v", last)
	}
	// With it the start succeeds and the file is on the node.
	resp, err = c.ApplyActions(ctx, &executorv1.ApplyActionsRequest{Pod: volumePod(), ConfigMaps: []*syncpodv1.ConfigMap{cm},
		Actions: &syncpodv1.PodActions{SandboxId: resp.GetSandboxId(), ContainersToStart: []*syncpodv1.ContainerStart{{Name: "web", SpecHash: "h"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if last := resp.GetSteps()[len(resp.GetSteps())-1]; last.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
		t.Fatalf("start with the configmap: %v", last)
	}
	file := filepath.Join(vm.PodDir(testUID), "volumes", "config-map", "config", "app.conf")
	if b, err := os.ReadFile(file); err != nil || string(b) != "v1" {
		t.Fatalf("projected file %q %v", b, err)
	}
	cm.Data["app.conf"] = "v2"
	up, err := c.UpdatePodVolumes(ctx, &executorv1.UpdatePodVolumesRequest{Pod: volumePod(), ConfigMaps: []*syncpodv1.ConfigMap{cm}})
	if err != nil || strings.Join(up.GetUpdated(), ",") != "config" || len(up.GetErrors()) != 0 {
		t.Fatalf("UpdatePodVolumes %v %v", up, err)
	}
	if b, _ := os.ReadFile(file); string(b) != "v2" {
		t.Fatalf("after update %q", b)
	}
	up, err = c.UpdatePodVolumes(ctx, &executorv1.UpdatePodVolumesRequest{Pod: volumePod()})
	if err != nil || len(up.GetErrors()) != 1 || !strings.Contains(up.GetErrors()[0], `configmap "cfg" not found`) {
		t.Fatalf("update without the configmap %v %v", up, err)
	}
	if _, err := c.RemovePodVolumes(ctx, &executorv1.RemovePodVolumesRequest{PodUid: testUID}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(vm.PodDir(testUID)); !os.IsNotExist(err) {
		t.Fatalf("pod dir after RemovePodVolumes: %v", err)
	}
}

func TestVolumeRPCValidation(t *testing.T) {
	c, _ := newVolumeClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.RemovePodVolumes(ctx, &executorv1.RemovePodVolumesRequest{PodUid: "../etc"})
	if got := badFields(t, err); strings.Join(got, ",") != "pod_uid" {
		t.Errorf("RemovePodVolumes fields %v", got)
	}
	_, err = c.RemovePodVolumes(ctx, &executorv1.RemovePodVolumesRequest{})
	if got := badFields(t, err); strings.Join(got, ",") != "pod_uid" {
		t.Errorf("RemovePodVolumes empty fields %v", got)
	}
	bad := volumePod()
	bad.Uid = ""
	bad.Spec.Containers[0].VolumeMounts[0].Name = "nope"
	_, err = c.UpdatePodVolumes(ctx, &executorv1.UpdatePodVolumesRequest{Pod: bad,
		ConfigMaps: []*syncpodv1.ConfigMap{{Name: "Bad"}}, Secrets: []*syncpodv1.Secret{{Name: "s", Data: map[string][]byte{"a b": nil}}}})
	want := "pod.uid,pod.spec.containers[0].volume_mounts[0].name,config_maps[0].name,secrets[0].data[\"a b\"]"
	if got := badFields(t, err); strings.Join(got, ",") != want {
		t.Errorf("UpdatePodVolumes fields %v, want %s", got, want)
	}
	_, err = c.ApplyActions(ctx, &executorv1.ApplyActionsRequest{Pod: volumePod(), ConfigMaps: []*syncpodv1.ConfigMap{{}},
		Actions: &syncpodv1.PodActions{CreateSandbox: true}})
	if got := badFields(t, err); strings.Join(got, ",") != "config_maps[0].name" {
		t.Errorf("ApplyActions config fields %v", got)
	}
}
