package crisim

import (
	"sort"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A crisim container is a host process with no mount namespace, so it
// cannot see a CRI Mount at its container path. crisim honours mounts
// through a per-container mount map instead: each mount's container path
// maps to its host path, and every command and argument, every environment
// value and the working directory of the container (and of its exec
// sessions and exec probes) has each container path that appears in it as
// a whole path (at the start of the string or after a character that
// cannot be part of a path, and followed by '/', the end, or such a
// character) replaced by the host path, longest container path first. So
// `cat /etc/config/app.conf` reads the mounted file, and a sidecar writing
// to /cache/x and a server reading /cache/x meet in the same emptyDir.
// Paths a program computes itself, or reads from a file, are not mapped;
// read-only and propagation are not enforced.

// pathMapping is one entry of a mount map.
type pathMapping struct {
	ContainerPath string `json:"container_path"`
	HostPath      string `json:"host_path"`
}

// mountMap builds a container's mount map from its CRI mounts, longest
// container path first (the most specific wins).
func mountMap(mounts []*runtimeapi.Mount) []pathMapping {
	var out []pathMapping
	for _, m := range mounts {
		cp := strings.TrimRight(m.GetContainerPath(), "/")
		if cp == "" || m.GetHostPath() == "" {
			continue
		}
		out = append(out, pathMapping{ContainerPath: cp, HostPath: m.GetHostPath()})
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].ContainerPath) > len(out[j].ContainerPath) })
	return out
}

func isPathByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("._-/~+@%,", b) >= 0
}

// mapPaths rewrites the container paths in s to host paths.
func mapPaths(s string, m []pathMapping) string {
	if len(m) == 0 || s == "" {
		return s
	}
	var b strings.Builder
	i := 0
outer:
	for i < len(s) {
		if s[i] == '/' && (i == 0 || !isPathByte(s[i-1])) {
			for _, pm := range m {
				cp := pm.ContainerPath
				if !strings.HasPrefix(s[i:], cp) {
					continue
				}
				end := i + len(cp)
				if end == len(s) || s[end] == '/' || !isPathByte(s[end]) {
					b.WriteString(pm.HostPath)
					i = end
					continue outer
				}
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// mapArgv rewrites every string of argv.
func mapArgv(argv []string, m []pathMapping) []string {
	if len(m) == 0 {
		return argv
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = mapPaths(a, m)
	}
	return out
}

// mapEnv rewrites the values of NAME=value strings.
func mapEnv(env []string, m []pathMapping) []string {
	if len(m) == 0 {
		return env
	}
	out := make([]string, len(env))
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out[i] = k + "=" + mapPaths(v, m)
	}
	return out
}

// statusMounts reports a mount map in a container status (as crictl
// inspect shows mounts); nil for none.
func statusMounts(m []pathMapping) []*runtimeapi.Mount {
	if len(m) == 0 {
		return nil
	}
	out := make([]*runtimeapi.Mount, len(m))
	for i, pm := range m {
		out[i] = &runtimeapi.Mount{ContainerPath: pm.ContainerPath, HostPath: pm.HostPath}
	}
	return out
}
