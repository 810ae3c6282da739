package ctl

import (
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestDescribeActionsListsAReset: `syncpodctl plan` names every
// instance a reset of the pod's containers stops and removes, in order.
func TestDescribeActionsListsAReset(t *testing.T) {
	got := describeActions(&syncpodv1.PodActions{SandboxId: "s1", ContainersToReset: []*syncpodv1.ContainerReset{
		{ContainerId: "c1", Name: "app", Kill: true, Message: "container app is stopped and removed: every container of the pod restarts"},
		{ContainerId: "c2", Name: "worker", Source: true},
	}})
	want := "1. stop and remove container app (c1): container app is stopped and removed: every container of the pod restarts\n" +
		"2. remove container worker (c2): every container of the pod restarts\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("describeActions:\n%s\nwant it to begin with:\n%s", got, want)
	}
}
