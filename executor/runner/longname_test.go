package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// a pod name of up to 253 characters runs. Its hostname is the
// kubelet's: cut to 63 characters, trailing '-' and '.' trimmed; its log
// directory can be made (one file name of at most 255 bytes); the hosts
// file names the cut hostname.
func TestLongPodNameGetsTheKubeletsHostnameAndALogDirectory(t *testing.T) {
	for _, tc := range []struct {
		name, hostname, want string
	}{
		{"short", "", "short"},
		{strings.Repeat("a", 63), "", strings.Repeat("a", 63)},
		{strings.Repeat("a", 62) + "-.b" + strings.Repeat("c", 100), "", strings.Repeat("a", 62)},
		{"pod-update-activedeadlineseconds-" + strings.Repeat("x", 40), "", "pod-update-activedeadlineseconds-" + strings.Repeat("x", 30)},
		{strings.Repeat("n", 253), "", strings.Repeat("n", 63)},
		{strings.Repeat("n", 253), "custom", "custom"},
	} {
		pod := testPod(nil, &syncpodv1.Container{Name: "app", Image: "busybox"})
		pod.Name = tc.name
		pod.Namespace = strings.Repeat("s", 63)
		pod.Spec.Hostname = tc.hostname
		pod.Spec.HostNetwork = false
		pod.Uid = "0b6a7c8e-1f2d-4e3a-9b4c-5d6e7f8a9b0c"
		if got := PodHostname(pod); got != tc.want {
			t.Errorf("PodHostname(%d characters) = %q, want %q", len(tc.name), got, tc.want)
		}
		if got := SandboxConfig(pod, 0, "/logs").GetHostname(); got != tc.want {
			t.Errorf("sandbox hostname = %q, want %q", got, tc.want)
		}
		if hosts := string(HostsFile(pod, []string{"10.0.0.7"}, nil)); !strings.Contains(hosts, "10.0.0.7\t"+tc.want+"\n") {
			t.Errorf("hosts file does not name %q:\n%s", tc.want, hosts)
		}
		root := t.TempDir()
		dir := PodLogDir(root, pod)
		base := filepath.Base(dir)
		if len(base) > 255 || !strings.HasPrefix(base, pod.Namespace+"_"+tc.name[:min(len(tc.name), 100)]) || !strings.HasSuffix(base, "_"+pod.GetUid()) {
			t.Errorf("log directory %q (%d bytes)", base, len(base))
		}
		if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
			t.Errorf("log directory of a %d-character name: %v", len(tc.name), err)
		}
	}
}
