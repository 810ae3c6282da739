package validate

import (
	"fmt"
	"strings"

	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// MaxConfigObjects bounds the ConfigMaps and the Secrets of one request.
const MaxConfigObjects = 256

// configObjects checks the ConfigMaps and Secrets sent with a pod.
func configObjects(l *fielderr.List, cms []*syncpodv1.ConfigMap, secrets []*syncpodv1.Secret) {
	if len(cms) > MaxConfigObjects {
		l.Add("config_maps", "%d entries exceed the limit of %d", len(cms), MaxConfigObjects)
	} else {
		for i, c := range cms {
			l.Append(fmt.Sprintf("config_maps[%d]", i), fielderr.As(validation.ConfigMap(c)))
		}
	}
	if len(secrets) > MaxConfigObjects {
		l.Add("secrets", "%d entries exceed the limit of %d", len(secrets), MaxConfigObjects)
	} else {
		for i, s := range secrets {
			l.Append(fmt.Sprintf("secrets[%d]", i), fielderr.As(validation.Secret(s)))
		}
	}
}

// UpdatePodVolumes checks the pod (uid required) and its config objects.
func UpdatePodVolumes(req *executorv1.UpdatePodVolumesRequest) error {
	var l fielderr.List
	if req.GetPod() == nil {
		l.Add("pod", "required")
	} else {
		if req.GetPod().GetUid() == "" {
			l.Add("pod.uid", "required")
		}
		l.Append("pod", fielderr.As(validation.Pod(req.GetPod())))
	}
	configObjects(&l, req.GetConfigMaps(), req.GetSecrets())
	return l.Err()
}

// RemovePodVolumes checks the pod uid: required, bounded, one path
// element (it names a directory).
func RemovePodVolumes(req *executorv1.RemovePodVolumesRequest) error {
	var l fielderr.List
	switch uid := req.GetPodUid(); {
	case uid == "":
		l.Add("pod_uid", "required")
	case len(uid) > validation.MaxIDLen:
		l.Add("pod_uid", "longer than %d bytes", validation.MaxIDLen)
	case uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00"):
		l.Add("pod_uid", "must be one path element")
	}
	return l.Err()
}

// GetEmptyDirUsage checks the uid (one path element) and the volume names
// (required, at most 64, each one path element).
func GetEmptyDirUsage(req *executorv1.GetEmptyDirUsageRequest) error {
	var l fielderr.List
	if err := RemovePodVolumes(&executorv1.RemovePodVolumesRequest{PodUid: req.GetPodUid()}); err != nil {
		l.Append("", fielderr.As(err))
	}
	names := req.GetVolumeNames()
	switch {
	case len(names) == 0:
		l.Add("volume_names", "required")
	case len(names) > maxUsageVolumes:
		l.Add("volume_names", "%d entries exceed the limit of %d", len(names), maxUsageVolumes)
	default:
		for i, n := range names {
			if n == "" || n == "." || n == ".." || len(n) > validation.MaxNameLen || strings.ContainsAny(n, "/\x00") {
				l.Add(fmt.Sprintf("volume_names[%d]", i), "must be one path element of at most %d bytes", validation.MaxNameLen)
			}
		}
	}
	return l.Err()
}

const maxUsageVolumes = 64
