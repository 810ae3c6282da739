package crisim

import (
	"os"
	"syscall"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// processUser is the user a container's process runs as: the config's
// run_as_user, with run_as_group (0 when unset, as a runtime does for a
// numeric user without a passwd entry) and its supplemental groups. It is
// honoured only when crisim itself runs as root (euid 0); otherwise, when
// the config names no user, or when it names root with no groups (what
// the executor asks for an image without a user), it is nil and the
// process runs as crisim's own user, in crisim's own directory.
func processUser(sc *runtimeapi.LinuxContainerSecurityContext, euid int) *processCred {
	if euid != 0 || sc.GetRunAsUser() == nil {
		return nil
	}
	if sc.GetRunAsUser().GetValue() == 0 && sc.GetRunAsGroup().GetValue() == 0 && len(sc.GetSupplementalGroups()) == 0 {
		return nil
	}
	c := &processCred{UID: uint32(sc.GetRunAsUser().GetValue())}
	if g := sc.GetRunAsGroup(); g != nil {
		c.GID = uint32(g.GetValue())
	}
	for _, g := range sc.GetSupplementalGroups() {
		c.Groups = append(c.Groups, uint32(g))
	}
	return c
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
