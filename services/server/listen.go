package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/syncpod/syncpod/services/server/access"
)

// SplitAddress turns a listen or dial address into a network and address
// (see access.SplitAddress).
func SplitAddress(addr string) (network, address string, err error) { return access.SplitAddress(addr) }

// Listen opens a listener on addr (see SplitAddress). A stale unix socket
// file left by a crashed process is removed first; the socket is made
// accessible to its owner and group only.
func Listen(addr string) (net.Listener, error) { return ListenGroup(addr, "") }

// ListenGroup is Listen with the unix socket's group set to group (a name
// or a numeric id; empty keeps the process's). A missing socket directory
// is created with mode 0711: others may pass through it but not list it,
// and the socket's own mode (0660) decides who connects.
func ListenGroup(addr, group string) (net.Listener, error) {
	network, address, err := SplitAddress(addr)
	if err != nil {
		return nil, err
	}
	gid := -1
	if network == "unix" && group != "" {
		if gid, err = lookupGroup(group); err != nil {
			return nil, fmt.Errorf("--socket-group: %w", err)
		}
	}
	if network == "unix" {
		if dir := filepath.Dir(address); dir != "" {
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(dir, 0o711); err != nil {
					return nil, err
				}
			}
		}
		if fi, err := os.Stat(address); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if c, err := net.Dial("unix", address); err == nil {
				c.Close()
				return nil, fmt.Errorf("%s: another process is serving on this socket", address)
			}
			_ = os.Remove(address)
		}
	}
	l, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	if network == "unix" {
		if err := os.Chmod(address, 0o660); err != nil {
			l.Close()
			return nil, err
		}
		if gid >= 0 {
			if err := os.Chown(address, -1, gid); err != nil {
				l.Close()
				return nil, fmt.Errorf("--socket-group: %w", err)
			}
		}
	}
	return l, nil
}

func lookupGroup(name string) (int, error) {
	if id, err := strconv.Atoi(name); err == nil {
		return id, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

// DialTarget turns a listen address into a gRPC dial target.
func DialTarget(addr string) (string, error) {
	network, address, err := SplitAddress(addr)
	if err != nil {
		return "", err
	}
	if network == "unix" {
		return "unix://" + address, nil
	}
	return "passthrough:///" + address, nil
}
