package userns

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"os/user"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// IDsPerPod is how many user and group IDs a pod's user namespace maps:
// its IDs 0 to 65535, the kubelet's default.
const IDsPerPod = 65536

// KubeletUser is the user whose subordinate IDs are the node's range, as
// for the kubelet.
const KubeletUser = "kubelet"

// Range is the host IDs pods' user namespaces are carved from: Length
// IDs from First, in slots of IDsPerPod.
type Range struct {
	First, Length uint32
}

// Default is the range without a configured one: every ID from IDsPerPod
// to 2^32-1 (the IDs below it stay the node's).
func Default() Range { return Range{First: IDsPerPod, Length: uint32((1 << 32) - uint64(IDsPerPod))} }

// Slots is how many pods the range holds; slot i maps host IDs from
// First + i*IDsPerPod.
func (r Range) Slots() int { return int(r.Length / IDsPerPod) }

// Check refuses a range the kubelet refuses, with its messages.
func (r Range) Check() error {
	switch {
	case r.First%IDsPerPod != 0:
		return fmt.Errorf("kubelet user assigned ID %d is not a multiple of %d", r.First, IDsPerPod)
	case r.First < IDsPerPod:
		return fmt.Errorf("kubelet user assigned ID %d must be greater or equal to %d", r.First, IDsPerPod)
	case r.Length%IDsPerPod != 0:
		return fmt.Errorf("kubelet user assigned IDs length %d is not a multiple of %d", r.Length, IDsPerPod)
	case r.Length == 0:
		return errors.New("kubelet user assigned IDs are not enough to support one pod")
	}
	return nil
}

// ParseSubIDs reads the range from getsubids' answer for one user, one
// line "0: <user> <first> <count>".
func ParseSubIDs(out string) (Range, error) {
	lines := strings.Split(strings.Trim(out, "\n"), "\n")
	if len(lines) != 1 {
		return Range{}, fmt.Errorf("subordinate IDs %q: want exactly one range", out)
	}
	f := strings.Fields(lines[0])
	if len(f) != 4 {
		return Range{}, fmt.Errorf("subordinate IDs %q: want \"<n>: <user> <first> <count>\"", lines[0])
	}
	first, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil {
		return Range{}, fmt.Errorf("subordinate IDs %q: first ID: %w", lines[0], err)
	}
	n, err := strconv.ParseUint(f[3], 10, 32)
	if err != nil {
		return Range{}, fmt.Errorf("subordinate IDs %q: count: %w", lines[0], err)
	}
	return Range{First: uint32(first), Length: uint32(n)}, nil
}

// NodeRange is the range the kubelet would use on this host: without a
// "kubelet" user or without the getsubids tool, Default; otherwise the
// user's subordinate user IDs, which must equal its group IDs.
func NodeRange() (Range, error) { return nodeRange(user.Lookup) }

func nodeRange(lookup func(string) (*user.User, error)) (Range, error) {
	if _, err := lookup(KubeletUser); err != nil {
		// No such user, or no user database at all (a FROM scratch
		// image has no /etc/passwd): the default range.
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) || errors.Is(err, fs.ErrNotExist) {
			return Default(), nil
		}
		return Range{}, fmt.Errorf("look up user %q: %w", KubeletUser, err)
	}
	tool, err := exec.LookPath("getsubids")
	if err != nil {
		return Default(), nil // no tool: the default range, as for the kubelet
	}
	uids, err := exec.Command(tool, KubeletUser).Output()
	if err != nil {
		return Range{}, fmt.Errorf("subordinate user IDs of %q: %w", KubeletUser, err)
	}
	gids, err := exec.Command(tool, "-g", KubeletUser).Output()
	if err != nil {
		return Range{}, fmt.Errorf("subordinate group IDs of %q: %w", KubeletUser, err)
	}
	if string(uids) != string(gids) {
		return Range{}, fmt.Errorf("subordinate user and group IDs of %q differ", KubeletUser)
	}
	r, err := ParseSubIDs(string(uids))
	if err != nil {
		return Range{}, err
	}
	return r, r.Check()
}

// Node is the CRI user namespace of a pod in the node's user namespace.
func Node() *runtimeapi.UserNamespace {
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
}

// Pod is the CRI user namespace of a pod in its own: its IDs 0 to
// IDsPerPod-1 are host IDs from hostID on, for users and groups alike.
func Pod(hostID uint32) *runtimeapi.UserNamespace {
	m := func() []*runtimeapi.IDMapping {
		return []*runtimeapi.IDMapping{{HostId: hostID, ContainerId: 0, Length: IDsPerPod}}
	}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m(), Gids: m()}
}

// HandlerSupports is the kubelet's check that the runtime handler a pod
// names (empty: the default one) runs user namespaces, from the
// runtime's Status; the error is the kubelet's message.
func HandlerSupports(st *runtimeapi.StatusResponse, handler string) error {
	msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if handler != "" {
		msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
	}
	hs := st.GetRuntimeHandlers()
	if len(hs) == 0 {
		return errors.New(msg)
	}
	for _, h := range hs {
		if h.GetName() == handler {
			if h.GetFeatures().GetUserNamespaces() {
				return nil
			}
			return errors.New(msg)
		}
	}
	return fmt.Errorf("%s: the handler %q is not known", msg, handler)
}
