package manifest

import (
	"testing"

	"google.golang.org/protobuf/proto"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// lifecycle.stopSignal and env[].valueFrom.fileKeyRef are
// converted, not refused.
func TestStopSignalAndFileKeyRefAreConverted(t *testing.T) {
	data := `apiVersion: v1
kind: Pod
metadata: {name: envfile}
spec:
  os: {name: linux}
  volumes: [{name: config, emptyDir: {}}]
  initContainers:
  - name: setup
    image: busybox
    command: [sh, -c, "echo CONFIG_VAR=\'v\' > /data/config.env"]
    volumeMounts: [{name: config, mountPath: /data}]
  containers:
  - name: app
    image: busybox
    lifecycle: {stopSignal: SIGUSR1}
    env:
    - name: CONFIG_VAR
      valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: CONFIG_VAR}}
    - name: MAYBE
      valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: MAYBE, optional: true}}
`
	pods, warns, err := Parse([]byte(data))
	if err != nil || len(warns) != 0 || len(pods) != 1 {
		t.Fatalf("Parse = %d pods, %v, %v", len(pods), warns, err)
	}
	c := pods[0].GetSpec().GetContainers()[0]
	if got := c.GetLifecycle().GetStopSignal(); got != "SIGUSR1" {
		t.Errorf("stop signal = %q, want SIGUSR1", got)
	}
	want := []*syncpodv1.FileKeySelector{
		{VolumeName: "config", Path: "config.env", Key: "CONFIG_VAR"},
		{VolumeName: "config", Path: "config.env", Key: "MAYBE", Optional: true},
	}
	for i, w := range want {
		if got := c.GetEnv()[i].GetValueFrom().GetFileKeyRef(); !proto.Equal(got, w) {
			t.Errorf("env[%d] fileKeyRef = %v, want %v", i, got, w)
		}
	}
}
