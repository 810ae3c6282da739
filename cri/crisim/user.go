package crisim

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/proto/fielderr"
)

// processUser is the user a container's process runs as: the config's
// run_as_user, or the user run_as_username names in the root
// filesystem's /etc/passwd (a crisim container's image is the host's
// root: lookup reads it), with run_as_group (when unset: the named
// user's group, or 0 for a numeric user, as a runtime does for one
// without a passwd entry) and the supplemental groups. Without a user,
// supplemental groups are added to crisim's own user (the image's
// default user is the host's root). It is honoured only when crisim
// itself runs as root (euid 0); otherwise, when the config names no user
// and no groups, or when it names root with no groups (what the executor
// asks for an image without a user), it is nil and the process runs as
// crisim's own user, in crisim's own directory. A user name that lookup
// does not know is bad input.
func processUser(sc *runtimeapi.LinuxContainerSecurityContext, euid int, lookup func(name string) (*user.User, error)) (*processCred, error) {
	if euid != 0 {
		return nil, nil
	}
	c := &processCred{}
	switch {
	case sc.GetRunAsUser() != nil:
		c.UID = uint32(sc.GetRunAsUser().GetValue())
	case sc.GetRunAsUsername() != "":
		u, err := lookup(sc.GetRunAsUsername())
		if err != nil {
			return nil, fielderr.Errors{{Path: "config.linux.security_context.run_as_username",
				Message: fmt.Sprintf("%v: the user must exist in /etc/passwd of crisim's root (a crisim container's image), or give run_as_user", err)}}
		}
		uid, uerr := strconv.ParseUint(u.Uid, 10, 32)
		gid, gerr := strconv.ParseUint(u.Gid, 10, 32)
		if uerr != nil || gerr != nil {
			return nil, fielderr.Errors{{Path: "config.linux.security_context.run_as_username",
				Message: fmt.Sprintf("user %q has uid %q and gid %q, not numbers", sc.GetRunAsUsername(), u.Uid, u.Gid)}}
		}
		c.UID, c.GID = uint32(uid), uint32(gid)
	}
	if g := sc.GetRunAsGroup(); g != nil {
		c.GID = uint32(g.GetValue())
	}
	for _, g := range sc.GetSupplementalGroups() {
		c.Groups = append(c.Groups, uint32(g))
	}
	if c.UID == 0 && c.GID == 0 && len(c.Groups) == 0 {
		return nil, nil
	}
	return c, nil
}

// processCred is the JSON-friendly form of a process credential (it is
// carried to the shim in its spec).
type processCred struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// sysProcAttr is the process attributes of a container: its own process
// group, and its user when one is set.
func sysProcAttr(c *processCred) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if c != nil {
		a.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: append([]uint32{}, c.Groups...)}
	}
	return a
}

func effectiveUID() int { return os.Geteuid() }

// lookupUser finds a user by name in the root filesystem's /etc/passwd.
func lookupUser(name string) (*user.User, error) { return user.Lookup(name) }
