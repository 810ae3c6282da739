package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func fileEnv(name, volume, path, key string, optional bool) *syncpodv1.EnvVar {
	return &syncpodv1.EnvVar{Name: name, ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FileKeyRef{
		FileKeyRef: &syncpodv1.FileKeySelector{VolumeName: volume, Path: path, Key: key, Optional: optional}}}}
}

// envFilePod sets up a pod with an emptyDir "config" holding config.env
// (content) and returns it with its volume paths.
func envFilePod(t *testing.T, content string) (*syncpodv1.Pod, Paths) {
	t.Helper()
	m := newManager(t)
	pod := testPod(&syncpodv1.Volume{Name: "config", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{}}})
	paths, err := m.Setup(pod, sources())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(paths["config"], "config.env"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return pod, paths
}

// a fileKeyRef variable is read from the env file an init
// container wrote in the emptyDir volume, when the container is created.
func TestEnvFileKeyRefReadsTheEnvFileInTheEmptyDir(t *testing.T) {
	pod, paths := envFilePod(t, "# written by setup\n\n  CONFIG_VAR='value1'\nMULTI='a\nb' # two lines\nEMPTY=''\nSPACED= 'x'\n")
	c := pod.GetSpec().GetContainers()[0]
	c.Env = []*syncpodv1.EnvVar{
		fileEnv("CONFIG_VAR", "config", "config.env", "CONFIG_VAR", false),
		fileEnv("RENAMED", "config", "/config.env", "MULTI", false),
		fileEnv("OPTIONAL_MISSING", "config", "config.env", "NOPE", true),
		fileEnv("OPTIONAL_EMPTY", "config", "config.env", "EMPTY", true),
		fileEnv("OPTIONAL_SPACED", "config", "config.env", "SPACED", true),
		{Name: "PLAIN", Value: "$(CONFIG_VAR)-x"},
	}
	kvs, err := Env(pod, c, sources(), PodInfo{Volumes: paths})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range kvs {
		got[kv.GetKey()] = string(kv.GetValue())
	}
	want := map[string]string{"CONFIG_VAR": "value1", "RENAMED": "a\nb", "PLAIN": "value1-x"}
	if len(got) != len(want) {
		t.Errorf("env = %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// what the kubelet refuses to create the container for
// (CreateContainerConfigError), with its message.
func TestEnvFileKeyRefErrorsAreTheKubelets(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		env           *syncpodv1.EnvVar
		want          string
	}{
		{"missing key", "A='1'\n", fileEnv("B", "config", "config.env", "B", false), `environment variable key "B" not found in file "`},
		{"empty value", "B=''\n", fileEnv("B", "config", "config.env", "B", false), `environment variable key "B" not found in file "`},
		{"missing file, even optional", "", fileEnv("B", "config", "other.env", "B", true), "couldn't parse env file: open \"other.env\""},
		{"unknown volume", "", fileEnv("B", "gone", "config.env", "B", false), `cannot find the volume "gone" referenced by FileKeyRef`},
		{"unquoted value", "A=1\nB='2'\n", fileEnv("B", "config", "config.env", "B", false), "couldn't parse env file \"config.env\" in volume \"config\": invalid environment variable format at line 1: value must be enclosed in single quotes"},
		{"blank before =", "B ='2'\n", fileEnv("B", "config", "config.env", "B", false), "line 1: whitespace before '=' is not allowed"},
		{"no =", "B\n", fileEnv("B", "config", "config.env", "B", false), "line 1: missing '='"},
		{"after the quote", "B='2' x\n", fileEnv("B", "config", "config.env", "B", false), "line 1: unexpected content after closing quote"},
		{"unclosed", "A='1\nB=2\n", fileEnv("B", "config", "config.env", "B", false), "starting at line 1: unclosed single quote"},
		{"line over 64 KiB", "A='" + strings.Repeat("x", 70<<10) + "'\nB='2'\n", fileEnv("B", "config", "config.env", "B", false), "token too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, paths := envFilePod(t, tc.content)
			c := pod.GetSpec().GetContainers()[0]
			c.Env = []*syncpodv1.EnvVar{tc.env}
			_, err := Env(pod, c, sources(), PodInfo{Volumes: paths})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// the file is looked up inside the volume: a symbolic link out of
// it is not followed.
func TestEnvFileKeyRefStaysInsideTheVolume(t *testing.T) {
	pod, paths := envFilePod(t, "B='inside'\n")
	outside := filepath.Join(t.TempDir(), "secret.env")
	if err := os.WriteFile(outside, []byte("B='outside'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(paths["config"], "link.env")); err != nil {
		t.Fatal(err)
	}
	c := pod.GetSpec().GetContainers()[0]
	c.Env = []*syncpodv1.EnvVar{fileEnv("B", "config", "link.env", "B", false)}
	kvs, err := Env(pod, c, sources(), PodInfo{Volumes: paths})
	if err == nil {
		t.Fatalf("read through a link out of the volume: %v", kvs)
	}
}

func TestParseEnvFileStopsAtTheKey(t *testing.T) {
	// Lines after the key's are not read, as the kubelet's parser does.
	v, err := parseEnvFile(strings.NewReader("A='1'\nbroken line\n"), "A")
	if err != nil || v != "1" {
		t.Fatalf("= %q, %v", v, err)
	}
	if _, err := parseEnvFile(strings.NewReader("broken\nA='1'\n"), "A"); !errors.Is(err, errEnvFileSyntax) {
		t.Fatalf("err = %v, want errEnvFileSyntax", err)
	}
}
