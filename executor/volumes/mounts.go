package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/expansion"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Images are the images of a pod's image volumes, by volume name: the
// image the runtime mounts (its id in the runtime and the reference the
// pod names).
type Images map[string]*runtimeapi.ImageSpec

// Mounts turns c's volume mounts into CRI mounts, in spec order. The
// configMap, secret, projected and downwardAPI volumes are always
// read-only, as with the kubelet. A subPath, or a subPathExpr expanded
// against env, the container's resolved environment, must be
// relative and free of ".."; it is resolved inside the volume
// (symlinks included) and must stay in it; a missing subPath directory is
// created in emptyDir and hostPath volumes with the volume directory's
// mode. An image volume is a CRI image mount of its entry in
// images, read-only whatever the mount says, its subPath the mount's
// image_sub_path, which the runtime resolves in the image. The
// errors are the kubelet's CreateContainerConfigError messages.
func Mounts(pod *syncpodv1.Pod, c *syncpodv1.Container, paths Paths, images Images, env []*runtimeapi.KeyValue) ([]*runtimeapi.Mount, error) {
	kinds := map[string]*syncpodv1.Volume{}
	for _, v := range pod.GetSpec().GetVolumes() {
		kinds[v.GetName()] = v
	}
	var vars map[string]string
	var out []*runtimeapi.Mount
	var errs []error
	for _, vm := range c.GetVolumeMounts() {
		v, ok := kinds[vm.GetName()]
		host, set := paths[vm.GetName()]
		img := images[vm.GetName()]
		if v.GetImage() != nil {
			set = img != nil
		}
		if !ok || !set {
			errs = append(errs, fmt.Errorf("cannot find volume %q to mount into container %q", vm.GetName(), c.GetName()))
			continue
		}
		readOnly := vm.GetReadOnly() || projectedKind(v) != ""
		if vm.GetSubPathExpr() != "" && vars == nil {
			vars = make(map[string]string, len(env))
			for _, kv := range env {
				vars[kv.GetKey()] = string(kv.GetValue())
			}
		}
		sp, err := SubPath(vm, vars)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if v.GetImage() != nil {
			out = append(out, &runtimeapi.Mount{
				ContainerPath: vm.GetMountPath(),
				Image:         img,
				ImageSubPath:  sp,
				Readonly:      true,
				Propagation:   propagation(vm.GetMountPropagation()),
			})
			continue
		}
		if sp != "" {
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

// SubPath is the path inside its volume that vm mounts, "" for the whole
// volume: its subPath, or its subPathExpr with each $(VAR) replaced by the
// variable's value in vars (package expansion's syntax; ). As with
// the kubelet, a reference to a variable that is undefined or empty fails
// the expansion ("missing value for A, B", names sorted), and the result
// must be relative and hold no ".." element: these are checked
// on the expanded path, which the API's validation of the expression
// cannot.
func SubPath(vm *syncpodv1.VolumeMount, vars map[string]string) (string, error) {
	sp := vm.GetSubPath()
	if expr := vm.GetSubPathExpr(); expr != "" {
		var missing []string
		sp = expansion.Expand(expr, func(name string) (string, bool) {
			v := vars[name]
			if v == "" && !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
			return v, true
		})
		if len(missing) > 0 {
			slices.Sort(missing)
			return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
		}
	}
	if sp == "" {
		return "", nil
	}
	if filepath.IsAbs(sp) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", sp)
	}
	if slices.Contains(strings.Split(sp, "/"), "..") {
		return "", fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sp)
	}
	return sp, nil
}

// subPath resolves the relative, ".."-free sp under base, refusing an
// escape through a symlink; create makes a missing directory, and each
// directory it makes gets base's mode (permissions, setgid and sticky
// bits) whatever the umask, as the kubelet's SafeMakeDir does.
func subPath(base, sp string, create bool) (string, error) {
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", err
	}
	full := filepath.Join(base, sp)
	if _, err := os.Lstat(full); os.IsNotExist(err) {
		if !create {
			return "", fmt.Errorf("subPath %q does not exist in the volume", sp)
		}
		if err := makeSubPathDirs(realBase, sp); err != nil {
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

// makeSubPathDirs creates the missing directories of sp under base, one
// element at a time, each with base's mode; an element that resolves
// outside base is refused before anything is made under it.
func makeSubPathDirs(base, sp string) error {
	fi, err := os.Stat(base)
	if err != nil {
		return err
	}
	mode := fi.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSticky)
	cur := base
	for _, part := range strings.Split(filepath.Clean(sp), "/") {
		if part == "" || part == "." {
			continue
		}
		next := filepath.Join(cur, part)
		if _, err := os.Lstat(next); err == nil {
			real, err := filepath.EvalSymlinks(next)
			if err != nil {
				return err
			}
			if real != base && !strings.HasPrefix(real, base+string(filepath.Separator)) {
				return fmt.Errorf("subPath %q resolves to %s, outside the volume", sp, real)
			}
			cur = real
			continue
		}
		if err := os.Mkdir(next, mode.Perm()); err != nil && !os.IsExist(err) {
			return err
		}
		if err := os.Chmod(next, mode); err != nil { // umask-proof
			return err
		}
		cur = next
	}
	return nil
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
