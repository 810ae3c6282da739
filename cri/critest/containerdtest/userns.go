package containerdtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// EnvUsernsHandler names the runtime handler of the test containerd that
// runs pods in user namespaces of their own (host_users false): the
// containerd 2.x instance of `make test` has runc-userns, a runc with
// idmapped mounts (mk/runcbin.sh). Unset: the runtime is not expected to
// run them (Debian's containerd 1.6 and runc 1.1 cannot).
const EnvUsernsHandler = "SYNCPOD_TEST_CONTAINERD_USERNS_HANDLER"

// IdmappedOverlayKernel is the first Linux release whose overlayfs takes
// idmapped mounts, which a pod's image layers need in a user namespace.
var IdmappedOverlayKernel = [2]int{5, 19}

// UserNamespaceHandler is the runtime handler named by
// SYNCPOD_TEST_CONTAINERD_USERNS_HANDLER, checked against the runtime's
// Status st: ok is false when the variable is unset (the caller checks the
// refusal instead). A named handler that does not list the user_namespaces
// feature fails the test, unless the kernel is older than
// IdmappedOverlayKernel: then the test is skipped, loudly, since no runc
// can run such a pod there.
func UserNamespaceHandler(t testing.TB, st *runtimeapi.StatusResponse) (handler string, ok bool) {
	t.Helper()
	handler = os.Getenv(EnvUsernsHandler)
	if handler == "" {
		return "", false
	}
	if release, old := kernelOlderThan(IdmappedOverlayKernel); old {
		msg := fmt.Sprintf("kernel %s has no idmapped overlayfs mounts (Linux %d.%d and later), so no runtime runs pods in user namespaces of their own here",
			release, IdmappedOverlayKernel[0], IdmappedOverlayKernel[1])
		fmt.Fprintf(os.Stderr, "!!! SKIP %s: %s\n", t.Name(), msg)
		t.Skip("SKIP: " + msg)
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == handler {
			if !h.GetFeatures().GetUserNamespaces() {
				t.Fatalf("%s=%s, but the runtime says that handler does not run user namespaces (its runc needs idmapped mounts: runc 1.2 or later)", EnvUsernsHandler, handler)
			}
			return handler, true
		}
	}
	t.Fatalf("%s=%s, but the runtime has no such handler (handlers %v)", EnvUsernsHandler, handler, st.GetRuntimeHandlers())
	return "", false
}

// kernelOlderThan reads the running kernel's release and reports whether
// it is older than want (major, minor). An unreadable release is not
// older: the runtime's own answer decides then.
func kernelOlderThan(want [2]int) (string, bool) {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "", false
	}
	release := strings.TrimSpace(string(b))
	major, minor, ok := parseRelease(release)
	if !ok {
		return release, false
	}
	return release, major < want[0] || (major == want[0] && minor < want[1])
}

// parseRelease reads "MAJOR.MINOR" from the start of a kernel release
// such as "6.18.44-fc-v669".
func parseRelease(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	digits := func(s string) string {
		end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			return s
		}
		return s[:end]
	}
	major, err1 := strconv.Atoi(digits(parts[0]))
	minor, err2 := strconv.Atoi(digits(parts[1]))
	return major, minor, err1 == nil && err2 == nil
}
