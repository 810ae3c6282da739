package access

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Version is the build version, set by the Makefile with -ldflags -X.
var Version = "dev"

// EnvPrefix is prepended to a flag's upper-cased name (dashes become
// underscores) to form its environment variable: --metrics-listen is
// SYNCPOD_METRICS_LISTEN.
const EnvPrefix = "SYNCPOD_"

// Identities of the default authorization policy: a certificate is
// granted a verb when its CommonName or one of its Organizations is listed
// for it. syncpodctl certs issues certificates in these groups.
const (
	GroupViewers = "syncpod:viewers" // read
	GroupEditors = "syncpod:editors" // read, write
	GroupAdmins  = "syncpod:admins"  // read, write, exec
	GroupNodes   = "syncpod:nodes"   // the services themselves: everything
)

// EnvName is the environment variable that stands in for a flag.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// DefaultSocket is where a service listens by default:
// $XDG_RUNTIME_DIR/syncpod/<name>.sock when that variable is set, else
// /run/syncpod/<name>.sock for root, else
// /tmp/syncpod-<uid>/<name>.sock.
func DefaultSocket(getenv func(string) string, name string) string {
	return filepath.Join(RuntimeDir(getenv), name+".sock")
}

// RuntimeDir is the directory of the default sockets (see DefaultSocket).
func RuntimeDir(getenv func(string) string) string {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "syncpod")
	}
	if os.Getuid() == 0 {
		return "/run/syncpod"
	}
	return filepath.Join(os.TempDir(), "syncpod-"+strconv.Itoa(os.Getuid()))
}

// SplitAddress turns a listen or dial address into a network and address:
// "unix:///run/x.sock" is ("unix", "/run/x.sock"), "tcp://h:p" and "h:p"
// are ("tcp", "h:p").
func SplitAddress(addr string) (network, address string, err error) {
	switch {
	case addr == "":
		return "", "", errors.New("address is empty")
	case strings.HasPrefix(addr, "unix://"):
		p := strings.TrimPrefix(addr, "unix://")
		if p == "" {
			return "", "", fmt.Errorf("%q has no socket path (want unix:///path/to.sock)", addr)
		}
		return "unix", p, nil
	case strings.HasPrefix(addr, "tcp://"):
		addr = strings.TrimPrefix(addr, "tcp://")
	case strings.Contains(addr, "://"):
		return "", "", fmt.Errorf("%q: only unix:// and tcp:// schemes are supported", addr)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", "", fmt.Errorf("%q is not host:port or unix:///path: %v", addr, err)
	}
	return "tcp", addr, nil
}
