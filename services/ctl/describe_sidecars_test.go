package ctl

import (
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// the kill of a terminating pod names the sidecars it keeps running
// until their turn.
func TestDescribeActionsNamesTheSidecarsAKillKeepsRunning(t *testing.T) {
	got := describeActions(&syncpodv1.PodActions{KillPod: true, Message: "the pod was deleted",
		SidecarsToKeepRunning: []*syncpodv1.ContainerStart{{Name: "proxy", SpecHash: "h"}}})
	want := "1. kill the pod: stop every running container and sandbox (unspecified)\n" +
		"2. meanwhile start sidecar proxy again whenever it exits before its turn to stop\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("describeActions:\n%s\nwant it to begin with:\n%s", got, want)
	}
}
