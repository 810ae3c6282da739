package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/executor/volumes"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// A container's volume mounts come first; the kubelet's default mounts
// (the pod's /etc/hosts, the termination log) are added after them and
// yield to a volume mounted at the same path. Volumes and the managed
// files share one pod directory, <pod-dir>/<uid>.
func TestVolumeMountsComeBeforeTheDefaultMountsWhichYieldToThem(t *testing.T) {
	rt, img := &recordingRuntime{Runtime: critest.NewRuntime(), mounts: map[string][]*runtimeapi.Mount{}}, critest.NewImages(busybox)
	podDir := t.TempDir()
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := volumeRunner(t, rt, img, podDir, Config{PodDir: podDir, HostsFile: hosts})
	empty := func(name string) *syncpodv1.Volume {
		return &syncpodv1.Volume{Name: name, Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}}
	}
	own, plain := ctr("own-hosts"), ctr("plain")
	own.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts"}, {Name: "data", MountPath: "/data"}}
	plain.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod := testPod(nil, own, plain)
	pod.Spec.Volumes = []*syncpodv1.Volume{empty("hosts"), empty("data")}
	resp, err := r.ApplyActionsWithSources(context.Background(), pod, nil,
		&syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: starts("own-hosts", "plain")}, volumes.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range resp.GetSteps() {
		if st.GetOutcome() == executorv1.Outcome_OUTCOME_FAILED {
			t.Fatalf("%s %s failed: %s %s", st.GetStep(), st.GetTarget(), st.GetReason(), st.GetMessage())
		}
	}
	mounts := map[string]map[string]string{} // container -> container path -> host path
	order := map[string][]string{}
	rt.mu.Lock()
	for name, ms := range rt.mounts {
		mounts[name] = map[string]string{}
		for _, m := range ms {
			if _, dup := mounts[name][m.GetContainerPath()]; dup {
				t.Errorf("%s: two mounts at %s", name, m.GetContainerPath())
			}
			mounts[name][m.GetContainerPath()] = m.GetHostPath()
			order[name] = append(order[name], m.GetContainerPath())
		}
	}
	rt.mu.Unlock()
	uidDir := filepath.Join(podDir, pod.GetUid())
	under := func(p, dir string) bool { return strings.HasPrefix(p, dir+string(filepath.Separator)) }
	if h := mounts["own-hosts"]["/etc/hosts"]; !under(h, filepath.Join(uidDir, "volumes")) {
		t.Errorf("own-hosts: /etc/hosts from %q, want its volume under %s", h, filepath.Join(uidDir, "volumes"))
	}
	if h := mounts["plain"]["/etc/hosts"]; h == "" || !under(h, uidDir) || under(h, filepath.Join(uidDir, "volumes")) {
		t.Errorf("plain: /etc/hosts from %q, want the pod's managed hosts file under %s", h, uidDir)
	}
	for _, name := range []string{"own-hosts", "plain"} {
		if d := mounts[name]["/data"]; !under(d, filepath.Join(uidDir, "volumes")) {
			t.Errorf("%s: /data from %q, want the data volume", name, d)
		}
		if l := mounts[name]["/dev/termination-log"]; !under(l, uidDir) {
			t.Errorf("%s: termination log from %q, want a file under %s", name, l, uidDir)
		}
	}
	if o := order["plain"]; len(o) != 3 || o[0] != "/data" {
		t.Errorf("plain's mounts in order %v, want the volume first, then the defaults", o)
	}
}

// recordingRuntime records the mounts of every container created, by name.
type recordingRuntime struct {
	*critest.Runtime
	mu     sync.Mutex
	mounts map[string][]*runtimeapi.Mount
}

func (r *recordingRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	r.mounts[cfg.GetMetadata().GetName()] = cfg.GetMounts()
	r.mu.Unlock()
	return r.Runtime.CreateContainer(ctx, sandboxID, cfg, sbCfg)
}

// TestSubPathExprIsExpandedWhenTheContainerIsCreated: a
// subPathExpr is expanded against the container's environment, downward
// API values included, when the container is created, and mounts that
// directory of the volume; an expansion that fails (a variable left empty,
// a path with "..") holds the container in CreateContainerConfigError with
// the kubelet's message, and the next start of the pod as it is then (its
// annotation added) succeeds.
func TestSubPathExprIsExpandedWhenTheContainerIsCreated(t *testing.T) {
	fieldEnv := func(name, path string) *syncpodv1.EnvVar {
		return &syncpodv1.EnvVar{Name: name, ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FieldRef{
			FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: path}}}}
	}
	for _, tc := range []struct {
		name    string
		env     []*syncpodv1.EnvVar
		expr    string
		msg     string // the first start's failure, "" for none
		fix     func(pod *syncpodv1.Pod)
		wantDir string // relative to the volume, after the (second) start
	}{
		{name: "R-18.1 the pod's name from the downward API", env: []*syncpodv1.EnvVar{fieldEnv("POD_NAME", "metadata.name")},
			expr: "$(POD_NAME)", wantDir: "demo"},
		{name: "R-18.2 '..' is refused after expansion", env: []*syncpodv1.EnvVar{{Name: "POD_NAME", Value: ".."}},
			expr: "$(POD_NAME)", msg: "unable to provision SubPath `..`: must not contain '..'"},
		{name: "R-18.2 an absolute path is refused after expansion", env: []*syncpodv1.EnvVar{{Name: "POD_NAME", Value: "/tmp"}},
			expr: "$(POD_NAME)", msg: "error SubPath `/tmp` must not be an absolute path"},
		{name: "R-18.1 an annotation added later lets the container start",
			env:  []*syncpodv1.EnvVar{{Name: "POD_NAME", Value: "foo"}, fieldEnv("ANNOTATION", "metadata.annotations['mysubpath']")},
			expr: "$(ANNOTATION)/$(POD_NAME)", msg: "missing value for ANNOTATION",
			fix: func(pod *syncpodv1.Pod) { pod.Annotations = map[string]string{"mysubpath": "mypath"} }, wantDir: "mypath/foo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, img := critest.NewRuntime(), critest.NewImages(busybox)
			podDir := t.TempDir()
			r := volumeRunner(t, rt, img, podDir, Config{})
			c := ctr("app")
			c.Env = tc.env
			c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "workdir1", MountPath: "/logs", SubPathExpr: tc.expr}}
			pod := testPod(nil, c)
			pod.Spec.Volumes = []*syncpodv1.Volume{{Name: "workdir1", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}}}
			sandboxID, start := startApp(t, r, rt, pod, "")
			if tc.msg != "" {
				if start.GetOutcome() != executorv1.Outcome_OUTCOME_FAILED || start.GetReason() != "CreateContainerConfigError" || start.GetMessage() != tc.msg {
					t.Fatalf("start %s %s %q, want CreateContainerConfigError %q", start.GetOutcome(), start.GetReason(), start.GetMessage(), tc.msg)
				}
				if tc.fix == nil {
					return
				}
				tc.fix(pod)
				_, start = startApp(t, r, rt, pod, sandboxID)
			}
			if start.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
				t.Fatalf("start %s %s %q", start.GetOutcome(), start.GetReason(), start.GetMessage())
			}
			vol := filepath.Join(podDir, pod.GetUid(), "volumes", "empty-dir", "workdir1")
			want := filepath.Join(vol, tc.wantDir)
			if fi, err := os.Stat(want); err != nil || !fi.IsDir() {
				t.Errorf("subpath directory %s: %v", want, err)
			}
			var got string
			for _, m := range rt.CreatedConfig(start.GetContainerId()).GetMounts() {
				if m.GetContainerPath() == "/logs" {
					got = m.GetHostPath()
				}
			}
			if real, _ := filepath.EvalSymlinks(want); got != real {
				t.Errorf("/logs mounted from %q, want %q", got, real)
			}
		})
	}
}

// startApp starts the pod's container "app" through r, in a new sandbox
// when sandboxID is "", else in that one with the pod observed as rt has
// it now. It returns the sandbox's id and the start's step.
func startApp(t *testing.T, r *Runner, rt internalapi.RuntimeService, pod *syncpodv1.Pod, sandboxID string) (string, *executorv1.StepResult) {
	t.Helper()
	actions := &syncpodv1.PodActions{SandboxId: sandboxID, CreateSandbox: sandboxID == "", ContainersToStart: starts("app")}
	var o *syncpodv1.ObservedPod
	if sandboxID != "" {
		var err error
		if o, err = observe.Read(context.Background(), rt, pod.GetUid(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := r.ApplyActionsWithSources(context.Background(), pod, o, actions, volumes.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetSandboxId(), stepsOnly(resp, executorv1.Step_STEP_START_CONTAINER).GetSteps()[0]
}

// volumeRunner is a Runner on rt and img with a volume manager on podDir
// (directories, no tmpfs) and a back-off store and log directory of the
// test's; cfg may set more (PodDir, HostsFile).
func volumeRunner(t *testing.T, rt internalapi.RuntimeService, img internalapi.ImageManagerService, podDir string, cfg Config) *Runner {
	t.Helper()
	store, err := backoff.Open(filepath.Join(t.TempDir(), "b.db"), backoff.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	vm, err := volumes.New(volumes.Options{Root: podDir, NoTmpfs: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Runtime = runtimeclient.NewRuntime(rt, nil, runtimeclient.Timeouts{})
	cfg.Images = runtimeclient.NewImages(img, nil, runtimeclient.Timeouts{})
	cfg.Backoff, cfg.LogDir, cfg.Volumes = store, t.TempDir(), vm
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
