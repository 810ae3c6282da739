package cgroups

import (
	"fmt"
	"path"
	"strings"

	"github.com/syncpod/syncpod/proto/podresources"
)

// Driver is how cgroups are named: the runtime's cgroup driver.
type Driver string

// The cgroup drivers of CRI.
const (
	Cgroupfs Driver = "cgroupfs"
	Systemd  Driver = "systemd"
)

// Name is a cgroup as its path components, independent of the driver
// (the kubelet's CgroupName): {"kubepods", "burstable", "pod<uid>"}.
type Name []string

// NodeName is the kubelet's node cgroup: --cgroup-root, read as a
// cgroupfs path, with "kubepods" appended.
func NodeName(cgroupRoot string) Name {
	var n Name
	for _, p := range strings.Split(strings.Trim(cgroupRoot, "/"), "/") {
		if p != "" {
			n = append(n, p)
		}
	}
	return append(n, "kubepods")
}

// Child is n with one more component.
func (n Name) Child(c string) Name {
	return append(append(Name{}, n...), c)
}

// QOSName is the cgroup of a QoS class under node: Guaranteed pods live in
// node itself, the other classes in its lower-cased child.
func QOSName(node Name, class podresources.QOSClass) Name {
	if class == podresources.Guaranteed {
		return node
	}
	return node.Child(strings.ToLower(string(class)))
}

// PodName is the cgroup of the pod with uid and class.
func PodName(node Name, class podresources.QOSClass, uid string) Name {
	return QOSName(node, class).Child(podPrefix + uid)
}

const podPrefix = "pod"

// Path is n as the driver spells it, which is both the directory under
// each hierarchy's mount point and what the runtime is given as a cgroup
// parent. cgroupfs: "/kubepods/burstable/pod<uid>". systemd: every
// component with "-" escaped as "_", joined by "-" into nested slices:
// "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice".
func (n Name) Path(d Driver) string {
	if d != Systemd {
		return "/" + path.Join(n...)
	}
	if len(n) == 0 {
		return "/"
	}
	var b strings.Builder
	prefix := ""
	for _, c := range n {
		c = strings.ReplaceAll(c, "-", "_")
		if prefix != "" {
			prefix += "-"
		}
		prefix += c
		b.WriteString("/" + prefix + ".slice")
	}
	return b.String()
}

// parsePath is the inverse of Path for the last component: the pod UID of
// a pod cgroup directory's base name, or "" when it is not one.
func podUIDOf(base string, d Driver) string {
	if d == Systemd {
		base = strings.TrimSuffix(base, ".slice")
		if i := strings.LastIndex(base, "-"); i >= 0 {
			base = base[i+1:]
		}
		base = strings.ReplaceAll(base, "_", "-")
	}
	if !strings.HasPrefix(base, podPrefix) || len(base) == len(podPrefix) {
		return ""
	}
	return base[len(podPrefix):]
}

// checkComponent refuses what cannot be a cgroup name component.
func checkComponent(c string) error {
	if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "/\x00") {
		return fmt.Errorf("%q cannot be part of a cgroup name", c)
	}
	return nil
}
