package ctl

import (
	"fmt"

	"github.com/syncpod/syncpod/planner/manifest"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ConvertManifest converts one Kubernetes v1 Pod document with the
// planner's manifest package, the same conversion static manifests get:
// unsupported fields are errors, cluster-only ones warnings. It is the
// KubernetesConverter syncpodctl runs with.
func ConvertManifest(js []byte) (*syncpodv1.Pod, []string, error) {
	pods, issues, err := manifest.Parse(js)
	if err != nil {
		return nil, nil, err
	}
	if len(pods) != 1 {
		return nil, nil, fmt.Errorf("want one pod, found %d", len(pods))
	}
	warnings := make([]string, len(issues))
	for i, is := range issues {
		warnings[i] = is.String()
	}
	return pods[0], warnings, nil
}
