package userns

import (
	"io/fs"
	"os/user"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestDefaultRange: without a configured range the kubelet maps pods from
// 65536 to the last 32-bit ID: 65535 slots.
func TestDefaultRange(t *testing.T) {
	r := Default()
	if r.First != 65536 || uint64(r.First)+uint64(r.Length) != 1<<32 || r.Slots() != 65535 {
		t.Errorf("default %+v, %d slots", r, r.Slots())
	}
	if err := r.Check(); err != nil {
		t.Error(err)
	}
}

// TestRangeCheck refuses what the kubelet refuses, with its messages.
func TestRangeCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Range
		want string
	}{
		{"aligned", Range{First: 65536 * 2, Length: 65536 * 10}, ""},
		{"first not aligned", Range{First: 100000, Length: 65536}, "kubelet user assigned ID 100000 is not a multiple of 65536"},
		{"first below one slot", Range{First: 0, Length: 65536}, "kubelet user assigned ID 0 must be greater or equal to 65536"},
		{"length not aligned", Range{First: 65536, Length: 1000}, "kubelet user assigned IDs length 1000 is not a multiple of 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Check()
			if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
				t.Errorf("Check = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParseSubIDs reads getsubids' one line and refuses anything else.
func TestParseSubIDs(t *testing.T) {
	r, err := ParseSubIDs("0: kubelet 65536 655360\n")
	if err != nil || r != (Range{First: 65536, Length: 655360}) {
		t.Errorf("ParseSubIDs = %+v, %v", r, err)
	}
	for _, bad := range []string{"", "0: kubelet 65536\n", "0: kubelet 1 2\n1: kubelet 3 4\n", "0: kubelet x 65536"} {
		if _, err := ParseSubIDs(bad); err == nil {
			t.Errorf("ParseSubIDs(%q) accepted", bad)
		}
	}
}

// TestPodMapping: a pod's IDs 0..65535 map to its slot, users and groups
// alike.
func TestPodMapping(t *testing.T) {
	u := Pod(65536 * 3)
	if u.GetMode() != runtimeapi.NamespaceMode_POD || len(u.GetUids()) != 1 || len(u.GetGids()) != 1 {
		t.Fatalf("Pod = %v", u)
	}
	for _, m := range []*runtimeapi.IDMapping{u.GetUids()[0], u.GetGids()[0]} {
		if m.GetHostId() != 65536*3 || m.GetContainerId() != 0 || m.GetLength() != 65536 {
			t.Errorf("mapping %v", m)
		}
	}
	if Node().GetMode() != runtimeapi.NamespaceMode_NODE {
		t.Errorf("Node = %v", Node())
	}
}

// TestHandlerSupports: a pod in its own user namespace needs a handler
// that says it runs them; otherwise the kubelet's message.
func TestHandlerSupports(t *testing.T) {
	st := func(hs ...*runtimeapi.RuntimeHandler) *runtimeapi.StatusResponse {
		return &runtimeapi.StatusResponse{RuntimeHandlers: hs}
	}
	userns := &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}
	for _, tc := range []struct {
		name, handler, want string
		st                  *runtimeapi.StatusResponse
	}{
		{"default handler supports", "", "", st(&runtimeapi.RuntimeHandler{Name: "", Features: userns})},
		{"named handler supports", "runc", "", st(&runtimeapi.RuntimeHandler{Name: ""}, &runtimeapi.RuntimeHandler{Name: "runc", Features: userns})},
		{"no handlers listed", "", "can't set `spec.hostUsers: false`, runtime does not support user namespaces", st()},
		{"default handler without", "", "can't set `spec.hostUsers: false`, runtime does not support user namespaces", st(&runtimeapi.RuntimeHandler{Name: ""})},
		{"named handler without", "kata", "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces",
			st(&runtimeapi.RuntimeHandler{Name: "", Features: userns}, &runtimeapi.RuntimeHandler{Name: "kata"})},
		{"unknown handler", "gvisor", "RuntimeClass handler \"gvisor\" does not support user namespaces: the handler \"gvisor\" is not known",
			st(&runtimeapi.RuntimeHandler{Name: "", Features: userns})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := HandlerSupports(tc.st, tc.handler)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("HandlerSupports = %v, want %q", err, tc.want)
			}
		})
	}
}

// A host without the kubelet user, or without a user database at all (the
// executor's FROM scratch image has no /etc/passwd), gets the default
// range; another failure to look the user up is an error.
func TestNodeRangeWithoutTheKubeletUser(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"no such user", user.UnknownUserError(KubeletUser), false},
		{"no /etc/passwd", &fs.PathError{Op: "open", Path: "/etc/passwd", Err: fs.ErrNotExist}, false},
		{"unreadable user database", &fs.PathError{Op: "open", Path: "/etc/passwd", Err: fs.ErrPermission}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := nodeRange(func(string) (*user.User, error) { return nil, tc.err })
			if tc.wantErr {
				if err == nil {
					t.Errorf("range %v, want an error", r)
				}
				return
			}
			if err != nil || r != Default() {
				t.Errorf("range %v, %v; want the default range", r, err)
			}
		})
	}
}
