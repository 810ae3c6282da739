package volumes

import (
	"log/slog"
	"os"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Permission bits the kubelet's volume ownership change adds for the
// pod's fsGroup: group read and write on an emptyDir, group read
// on the kubelet-written volumes, and group search plus setgid on every
// directory.
const (
	groupRW   os.FileMode = 0o660
	groupRO   os.FileMode = 0o440
	groupExec os.FileMode = 0o110
)

// fsGroup is the pod's securityContext.fsGroup, nil when unset.
func fsGroup(pod *syncpodv1.Pod) *int64 {
	if sc := pod.GetSpec().GetSecurityContext(); sc != nil {
		return sc.FsGroup
	}
	return nil
}

// fsUser is the one user every container of the pod runs as, nil when a
// container names none (it runs as the image's user) or two containers
// name different ones: the owner of the pod's service account token files
// . Init, regular and ephemeral containers all count, each with
// its own runAsUser or else the pod's.
func fsUser(pod *syncpodv1.Pod) *int64 {
	spec := pod.GetSpec()
	var podUser *int64
	if psc := spec.GetSecurityContext(); psc != nil {
		podUser = psc.RunAsUser
	}
	var user *int64
	var differ bool
	visit := func(sc *syncpodv1.SecurityContext) {
		u := podUser
		if sc != nil && sc.RunAsUser != nil {
			u = sc.RunAsUser
		}
		switch {
		case u == nil:
			differ = true
		case user == nil:
			user = u
		case *user != *u:
			differ = true
		}
	}
	for _, c := range spec.GetInitContainers() {
		visit(c.GetSecurityContext())
	}
	for _, c := range spec.GetContainers() {
		visit(c.GetSecurityContext())
	}
	for _, c := range spec.GetEphemeralContainers() {
		visit(c.GetSecurityContext())
	}
	if differ {
		return nil
	}
	return user
}

// groupMode is a written file's or directory's mode once the pod's
// fsGroup owns it: the kubelet writes a volume's files, then adds the
// group bits (read-only volumes get read, an emptyDir read and write),
// and search and setgid on directories.
func groupMode(mode os.FileMode, gid *int64, readOnly, dir bool) os.FileMode {
	if gid == nil {
		return mode
	}
	mask := groupRW
	if readOnly {
		mask = groupRO
	}
	if dir {
		mask |= groupExec | os.ModeSetgid
	}
	return mode | mask
}

// chownGroup gives path (not what a symlink points to) to the fsGroup and,
// when uid is set, to that user.
func chownGroup(path string, uid, gid *int64) error {
	if uid == nil && gid == nil {
		return nil
	}
	u, g := -1, -1
	if uid != nil {
		u = int(*uid)
	}
	if gid != nil {
		g = int(*gid)
	}
	return lchown(path, u, g)
}

// lchown is os.Lchown; a test makes it fail as it does for a node agent
// that is not root.
var lchown = os.Lchown

// chownLog collects the changes of owner that failed (a node agent not
// running as root, a filesystem that refuses them): as the kubelet's
// ownership change, a failure is logged and never fails the volume.
type chownLog struct{ errs []error }

func (c *chownLog) chown(path string, uid, gid *int64) {
	if err := chownGroup(path, uid, gid); err != nil {
		c.errs = append(c.errs, err)
	}
}

// warn logs the failures of one volume, the first of them by name.
func (c *chownLog) warn(logger *slog.Logger, volume string) {
	if len(c.errs) > 0 {
		logger.Warn("cannot give a volume's files to the pod's fsGroup or user; they keep their owner",
			"volume", volume, "failed", len(c.errs), "first", c.errs[0])
	}
}
