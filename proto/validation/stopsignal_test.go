package validation_test

import (
	"strings"
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

func problems(err error) map[string]string {
	out := map[string]string{}
	for _, fe := range fielderr.As(err) {
		out[fe.Path] = fe.Message
	}
	return out
}

// a stop signal needs spec.os.name, and then one of that OS's
// signals, as the API server checks it.
func TestStopSignalIsCheckedAsTheAPIServerDoes(t *testing.T) {
	const path = "spec.containers[0].lifecycle.stop_signal"
	for _, tc := range []struct {
		name, os, signal string
		want             string // a part of the message; "" is valid
	}{
		{"linux SIGUSR1", "linux", "SIGUSR1", ""},
		{"linux real-time", "linux", "SIGRTMIN+3", ""},
		{"linux SIGRTMAX-14", "linux", "SIGRTMAX-14", ""},
		{"no os", "", "SIGUSR1", "spec.os.name is empty"},
		{"unknown name", "linux", "SIGFOO", `unsupported value "SIGFOO"`},
		{"number", "linux", "10", `unsupported value "10"`},
		{"lower case", "linux", "sigterm", `unsupported value "sigterm"`},
		{"past SIGRTMIN+15", "linux", "SIGRTMIN+16", `unsupported value "SIGRTMIN+16"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &syncpodv1.Pod{Name: "p", Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{
				Name: "c", Image: "i", Lifecycle: &syncpodv1.Lifecycle{StopSignal: tc.signal}}}}}
			if tc.os != "" {
				p.Spec.Os = &syncpodv1.PodOS{Name: tc.os}
			}
			got := problems(validation.Pod(p))
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("rejected: %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[path], tc.want) {
				t.Fatalf("problems = %v, want one at %s containing %q", got, path, tc.want)
			}
		})
	}
}

// an env file selector names an emptyDir volume of the pod, a
// path without "..", and a key that is an environment variable name.
func TestFileKeyRefIsCheckedAsTheAPIServerDoes(t *testing.T) {
	vols := []*syncpodv1.Volume{
		{Name: "scratch", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}},
		{Name: "host", Source: &syncpodv1.Volume_HostPath{HostPath: &syncpodv1.HostPathVolumeSource{Path: "/tmp"}}},
	}
	env := func(f *syncpodv1.FileKeySelector) *syncpodv1.Container {
		return &syncpodv1.Container{Env: []*syncpodv1.EnvVar{{Name: "V", ValueFrom: &syncpodv1.EnvVarSource{
			Source: &syncpodv1.EnvVarSource_FileKeyRef{FileKeyRef: f}}}}}
	}
	if err := validation.Pod(volPod(vols, env(&syncpodv1.FileKeySelector{VolumeName: "scratch", Path: "sub/config.env", Key: "MY.VAR", Optional: true}))); err != nil {
		t.Fatalf("valid selector rejected: %v", err)
	}
	const p = "spec.containers[0].env[0].value_from.file_key_ref"
	for _, tc := range []struct {
		name string
		sel  *syncpodv1.FileKeySelector
		want map[string]string
	}{
		{"all missing", &syncpodv1.FileKeySelector{}, map[string]string{p + ".volume_name": "required", p + ".path": "required", p + ".key": "required"}},
		{"not an emptyDir", &syncpodv1.FileKeySelector{VolumeName: "host", Path: "f", Key: "K"}, map[string]string{p + ".volume_name": "must be an emptyDir"}},
		{"no such volume", &syncpodv1.FileKeySelector{VolumeName: "nope", Path: "f", Key: "K"}, map[string]string{p + ".volume_name": `no volume "nope"`}},
		{"backstep", &syncpodv1.FileKeySelector{VolumeName: "scratch", Path: "a/../../etc/passwd", Key: "K"}, map[string]string{p + ".path": "'..'"}},
		{"key with =", &syncpodv1.FileKeySelector{VolumeName: "scratch", Path: "f", Key: "A=B"}, map[string]string{p + ".key": "other than '='"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(validation.Pod(volPod(vols, env(tc.sel))))
			if len(got) != len(tc.want) {
				t.Fatalf("problems = %v, want %v", got, tc.want)
			}
			for path, part := range tc.want {
				if !strings.Contains(got[path], part) {
					t.Errorf("%s: %q, want it to contain %q", path, got[path], part)
				}
			}
		})
	}
}
