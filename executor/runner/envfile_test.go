package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/cri/critest"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// a fileKeyRef variable is read from the pod's emptyDir when the
// container is created; before the file exists the start fails with
// CreateContainerConfigError and the kubelet's message, and once an init
// container (here the test) wrote it, the next start gets the value.
func TestEnvFileIsReadFromThePodsEmptyDirAtCreation(t *testing.T) {
	rt, img := critest.NewRuntime(), critest.NewImages(busybox)
	podDir := t.TempDir()
	r := volumeRunner(t, rt, img, podDir, Config{})
	c := ctr("app")
	c.Env = []*syncpodv1.EnvVar{{Name: "CONFIG_VAR", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FileKeyRef{
		FileKeyRef: &syncpodv1.FileKeySelector{VolumeName: "config", Path: "config.env", Key: "CONFIG_VAR"}}}}}
	pod := testPod(nil, c)
	pod.Spec.Volumes = []*syncpodv1.Volume{{Name: "config", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}}}
	sandboxID, start := startApp(t, r, rt, pod, "")
	if start.GetOutcome() != executorv1.Outcome_OUTCOME_FAILED || start.GetReason() != "CreateContainerConfigError" ||
		!strings.HasPrefix(start.GetMessage(), "couldn't parse env file") {
		t.Fatalf("start %s %s %q, want CreateContainerConfigError couldn't parse env file", start.GetOutcome(), start.GetReason(), start.GetMessage())
	}
	vol := filepath.Join(podDir, pod.GetUid(), "volumes", "empty-dir", "config")
	if err := os.WriteFile(filepath.Join(vol, "config.env"), []byte("CONFIG_VAR='value1'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, start = startApp(t, r, rt, pod, sandboxID)
	if start.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
		t.Fatalf("start %s %s %q", start.GetOutcome(), start.GetReason(), start.GetMessage())
	}
	var got []string
	for _, kv := range rt.CreatedConfig(start.GetContainerId()).GetEnvs() {
		if kv.GetKey() == "CONFIG_VAR" {
			got = append(got, string(kv.GetValue()))
		}
	}
	if len(got) != 1 || got[0] != "value1" {
		t.Errorf("CONFIG_VAR = %q, want [value1]", got)
	}
}
