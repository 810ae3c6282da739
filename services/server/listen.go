package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

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

// Listen opens a listener on addr (see SplitAddress). A stale unix socket
// file left by a crashed process is removed first; the socket is made
// accessible to its owner and group only.
func Listen(addr string) (net.Listener, error) {
	network, address, err := SplitAddress(addr)
	if err != nil {
		return nil, err
	}
	if network == "unix" {
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
	}
	return l, nil
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
