package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/executor/volumes"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// withVolumes gives x a runner that materialises volumes under a private
// root, with a fixed node name and host IP for the downward API.
func withVolumes(t *testing.T, x *real) *volumes.Manager {
	t.Helper()
	vm, err := volumes.New(volumes.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	x.r, err = runner.New(runner.Config{
		Runtime: runtimeclient.NewRuntime(x.cd.Runtime, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Images:  runtimeclient.NewImages(x.cd.Images, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Backoff: x.store, LogDir: x.logDir, Volumes: vm, NodeName: "itest-node", HostIP: "127.0.0.1",
	})
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// containerLog is the text a container wrote (CRI log lines' content).
func containerLogText(t *testing.T, x *real, pod *syncpodv1.Pod, name string, restart int32) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runner.PodLogDir(x.logDir, pod), runner.ContainerLogPath(name, restart)))
	if err != nil {
		return ""
	}
	var out []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		// <time> <stream> <tag> <content>
		if parts := strings.SplitN(line, " ", 4); len(parts) == 4 {
			out = append(out, parts[3])
		}
	}
	return strings.Join(out, "\n")
}

func waitLog(t *testing.T, x *real, pod *syncpodv1.Pod, name, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := containerLogText(t, x, pod, name, 0)
		if strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("log of %s never showed %q; it holds:\n%s", name, want, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestContainerdVolumesEnvSourcesAndDownwardAPIReachTheContainer(t *testing.T) {
	x := newReal(t, backoff.Config{})
	vm := withVolumes(t, x)
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "motd"), []byte("from the node"), 0o644); err != nil {
		t.Fatal(err)
	}
	bb := x.cd.Busybox
	writer := sh("writer", bb, `echo shared-by-sidecar > /cache/note; echo tmp > /fast/t; trap "exit 0" TERM; while true; do sleep 0.2; done`)
	writer.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "cache", MountPath: "/cache"}, {Name: "fast", MountPath: "/fast"}}
	reader := sh("reader", bb, `while [ ! -s /cache/note ]; do sleep 0.1; done
echo "note=$(cat /cache/note)"
echo "conf=$(cat /etc/app/app.conf)"
echo "single=$(cat /etc/single.conf)"
echo "motd=$(cat /host/motd)"
echo "file-pw=$(cat /secrets/password)"
echo "pw=$PASSWORD user=$DB_user mode=$mode"
echo "pod=$POD_NAME ns=$POD_NS node=$NODE ip=$POD_IP hostip=$HOST_IP app=$APP mem=$MEM_MI"
echo "labels=$(cat /info/labels | tr '\n' ' ')"
echo "ro=$(touch /etc/app/x 2>/dev/null && echo writable || echo read-only)"
while true; do echo "live=$(cat /etc/app/app.conf)"; sleep 0.2; done`)
	reader.VolumeMounts = []*syncpodv1.VolumeMount{
		{Name: "cache", MountPath: "/cache"},
		{Name: "config", MountPath: "/etc/app"},
		{Name: "config", MountPath: "/etc/single.conf", SubPath: "app.conf"},
		{Name: "host", MountPath: "/host", ReadOnly: true},
		{Name: "info", MountPath: "/info"},
		{Name: "secret-files", MountPath: "/secrets"},
	}
	reader.EnvFrom = []*syncpodv1.EnvFromSource{{Prefix: "DB_", SecretRef: &syncpodv1.SecretEnvSource{Name: "creds"}}, {ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "cfg"}}}
	field := func(n, p string) *syncpodv1.EnvVar {
		return &syncpodv1.EnvVar{Name: n, ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FieldRef{FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: p}}}}
	}
	reader.Env = []*syncpodv1.EnvVar{
		{Name: "PASSWORD", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{SecretKeyRef: &syncpodv1.SecretKeySelector{Name: "creds", Key: "password"}}}},
		field("POD_NAME", "metadata.name"), field("POD_NS", "metadata.namespace"), field("NODE", "spec.nodeName"),
		field("POD_IP", "status.podIP"), field("HOST_IP", "status.hostIP"), field("APP", "metadata.labels['app']"),
		{Name: "MEM_MI", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ResourceFieldRef{ResourceFieldRef: &syncpodv1.ResourceFieldSelector{Resource: "limits.memory", Divisor: "1Mi"}}}},
	}
	reader.Resources = &syncpodv1.ResourceRequirements{Limits: &syncpodv1.ResourceList{Memory: "64Mi"}}
	// Registered before the pod's own cleanup, so it runs after it: the
	// volumes go once the containers are gone.
	var uid string
	t.Cleanup(func() {
		if uid != "" {
			if err := x.r.RemoveVolumes(context.Background(), uid); err != nil {
				t.Errorf("RemoveVolumes: %v", err)
			}
		}
	})
	pod := realPod(t, x, nil, writer, reader)
	uid = pod.GetUid()
	pod.Labels = map[string]string{"app": "shop"}
	pod.Spec.Volumes = []*syncpodv1.Volume{
		{Name: "cache", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}},
		{Name: "fast", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{Medium: syncpodv1.StorageMedium_STORAGE_MEDIUM_MEMORY, SizeLimit: "8Mi"}}},
		{Name: "config", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "cfg"}}},
		{Name: "secret-files", Source: &syncpodv1.Volume_Secret{Secret: &syncpodv1.SecretVolumeSource{SecretName: "creds", DefaultMode: i32p(0o400)}}},
		{Name: "host", Source: &syncpodv1.Volume_HostPath{HostPath: &syncpodv1.HostPathVolumeSource{Path: hostDir, Type: syncpodv1.HostPathType_HOST_PATH_TYPE_DIRECTORY}}},
		{Name: "info", Source: &syncpodv1.Volume_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIVolumeSource{Items: []*syncpodv1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
	}
	cm := &syncpodv1.ConfigMap{Name: "cfg", Namespace: "syncpod-test", Data: map[string]string{"app.conf": "port=80", "mode": "prod"}}
	secret := &syncpodv1.Secret{Name: "creds", Namespace: "syncpod-test", Data: map[string][]byte{"password": []byte("s3cret"), "user": []byte("admin")}}
	src := volumes.NewSources([]*syncpodv1.ConfigMap{cm}, []*syncpodv1.Secret{secret})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := x.r.ApplyActionsWithSources(ctx, pod, x.observe(t, uid), &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: start("writer", "reader")}, src)
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, resp)
	got := waitLog(t, x, pod, "reader", "live=port=80")
	for _, want := range []string{
		"note=shared-by-sidecar", "conf=port=80", "file-pw=s3cret", "single=port=80", "motd=from the node",
		"pw=s3cret user=admin mode=prod",
		"pod=itest ns=syncpod-test node=itest-node ip=127.0.0.1 hostip=127.0.0.1 app=shop mem=64",
		`labels=app="shop"`, "ro=read-only",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("reader log lacks %q:\n%s", want, got)
		}
	}

	// The ConfigMap changes: the mounted file follows in place (the
	// subPath mount does not, as with the kubelet) and nothing restarts.
	before := newest(x.observe(t, uid), "reader").GetId()
	cm.Data["app.conf"] = "port=8080"
	updated, errs, err := x.r.UpdateVolumes(ctx, pod, volumes.NewSources([]*syncpodv1.ConfigMap{cm}, []*syncpodv1.Secret{secret}))
	if err != nil || len(errs) != 0 || strings.Join(updated, ",") != "config" {
		t.Fatalf("UpdateVolumes = %v %v %v", updated, errs, err)
	}
	waitLog(t, x, pod, "reader", "live=port=8080")
	o := x.observe(t, uid)
	if c := newest(o, "reader"); c.GetId() != before || c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
		t.Fatalf("reader after the update: %v (was %s)", c, before)
	}

	// The memory emptyDir is a tmpfs on the node while the pod lives.
	fast := filepath.Join(vm.PodDir(uid), "volumes", "empty-dir", "fast")
	if b, err := os.ReadFile(filepath.Join(fast, "t")); err != nil || string(b) != "tmp\n" {
		t.Errorf("memory emptyDir content on the node: %q %v", b, err)
	}
}

func TestContainerdMissingConfigMapIsCreateContainerConfigError(t *testing.T) {
	x := newReal(t, backoff.Config{})
	withVolumes(t, x)
	c := sh("app", x.cd.Busybox, "echo never")
	c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}
	env := sh("env", x.cd.Busybox, "echo never")
	env.Env = []*syncpodv1.EnvVar{{Name: "X", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{SecretKeyRef: &syncpodv1.SecretKeySelector{Name: "absent", Key: "k"}}}}}
	pod := realPod(t, x, nil, c, env)
	t.Cleanup(func() { _ = x.r.RemoveVolumes(context.Background(), pod.GetUid()) })
	pod.Spec.Volumes = []*syncpodv1.Volume{{Name: "config", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "absent"}}}}
	resp := x.apply(t, pod, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: start("app", "env")})
	var fails []string
	for _, s := range resp.GetSteps() {
		if s.GetStep() == executorv1.Step_STEP_START_CONTAINER {
			if s.GetOutcome() != executorv1.Outcome_OUTCOME_FAILED || s.GetReason() != "CreateContainerConfigError" {
				t.Errorf("start %s: %v %s %s", s.GetTarget(), s.GetOutcome(), s.GetReason(), s.GetMessage())
			}
			fails = append(fails, s.GetMessage())
		}
	}
	want := []string{`MountVolume.SetUp failed for volume "config" : configmap "absent" not found`,
		`MountVolume.SetUp failed for volume "config" : configmap "absent" not found`}
	if strings.Join(fails, "|") != strings.Join(want, "|") {
		t.Fatalf("messages %q, want %q", fails, want)
	}
	if o := x.observe(t, pod.GetUid()); len(o.GetContainers()) != 0 {
		t.Fatalf("containers created: %v", o.GetContainers())
	}
}

func i32p(v int32) *int32 { return &v }
