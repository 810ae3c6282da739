package server

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"

	"google.golang.org/grpc/credentials"
)

// unixPeerCredentials are the transport credentials of a unix-socket
// listener: no encryption (the kernel carries the bytes), and the peer's
// process credentials (SO_PEERCRED) as its AuthInfo, so that the audit
// trail names the user who called.
type unixPeerCredentials struct{}

// unixPeer is who connected to a unix socket.
type unixPeer struct {
	credentials.CommonAuthInfo
	UID, GID uint32
	PID      int32
}

func (unixPeer) AuthType() string { return "unix-peer" }

func (unixPeerCredentials) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	info := unixPeer{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, nil, errors.New("unix peer credentials on a connection that is not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		var cred *syscall.Ucred
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		if credErr == nil {
			info.UID, info.GID, info.PID = cred.Uid, cred.Gid, cred.Pid
		}
	}); err != nil {
		return nil, nil, err
	}
	if credErr != nil {
		return nil, nil, credErr
	}
	return c, info, nil
}

func (unixPeerCredentials) ClientHandshake(_ context.Context, _ string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("unix peer credentials are for servers")
}

func (unixPeerCredentials) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "unix-peer"}
}

func (u unixPeerCredentials) Clone() credentials.TransportCredentials { return u }

func (unixPeerCredentials) OverrideServerName(string) error { return nil }

func (p unixPeer) String() string {
	return "unix:uid=" + strconv.FormatUint(uint64(p.UID), 10) + ",pid=" + strconv.Itoa(int(p.PID))
}
