package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Mounts turns c's volume mounts into CRI mounts, in spec order. The
// configMap, secret, projected and downwardAPI volumes are always
// read-only, as with the kubelet. A subPath is resolved inside the volume
// (symlinks included) and must stay in it; a missing subPath directory is
// created (0755) in emptyDir and hostPath volumes.
func Mounts(pod *syncpodv1.Pod, c *syncpodv1.Container, paths Paths) ([]*runtimeapi.Mount, error) {
	kinds := map[string]*syncpodv1.Volume{}
	for _, v := range pod.GetSpec().GetVolumes() {
		kinds[v.GetName()] = v
	}
	var out []*runtimeapi.Mount
	var errs []error
	for _, vm := range c.GetVolumeMounts() {
		v, ok := kinds[vm.GetName()]
		host, set := paths[vm.GetName()]
		if !ok || !set {
			errs = append(errs, fmt.Errorf("cannot find volume %q to mount into container %q", vm.GetName(), c.GetName()))
			continue
		}
		readOnly := vm.GetReadOnly() || projectedKind(v) != ""
		if sp := vm.GetSubPath(); sp != "" {
			p, err := subPath(host, sp, projectedKind(v) == "")
			if err != nil {
				errs = append(errs, fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q: %w", vm.GetName(), c.GetName(), err))
				continue
			}
			host = p
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath: vm.GetMountPath(),
			HostPath:      host,
			Readonly:      readOnly,
			Propagation:   propagation(vm.GetMountPropagation()),
		})
	}
	return out, errors.Join(errs...)
}

// subPath resolves sp under base, refusing an escape through ".." or a
// symlink; create makes a missing directory.
func subPath(base, sp string, create bool) (string, error) {
	if filepath.IsAbs(sp) {
		return "", fmt.Errorf("subPath %q must be relative", sp)
	}
	for _, part := range strings.Split(sp, "/") {
		if part == ".." {
			return "", fmt.Errorf("subPath %q must not contain '..'", sp)
		}
	}
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", err
	}
	full := filepath.Join(base, sp)
	if _, err := os.Lstat(full); os.IsNotExist(err) {
		if !create {
			return "", fmt.Errorf("subPath %q does not exist in the volume", sp)
		}
		if err := os.MkdirAll(full, 0o755); err != nil {
			return "", err
		}
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", err
	}
	if real != realBase && !strings.HasPrefix(real, realBase+string(filepath.Separator)) {
		return "", fmt.Errorf("subPath %q resolves to %s, outside the volume", sp, real)
	}
	return real, nil
}

func propagation(p syncpodv1.MountPropagation) runtimeapi.MountPropagation {
	switch p {
	case syncpodv1.MountPropagation_MOUNT_PROPAGATION_HOST_TO_CONTAINER:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case syncpodv1.MountPropagation_MOUNT_PROPAGATION_BIDIRECTIONAL:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	default:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	}
}
