//go:build linux

package manifest

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readManifest reads the file at path. With check, it first asks the
// kernel for a read lease, which Linux grants only while no process has the
// file open for writing: granted, the content is whole (and stays so while
// it is read: a writer's open waits for the lease to be let go, at the
// close below, microseconds later; one with O_NONBLOCK gets EWOULDBLOCK
// in that window, and Go ignores the lease-break SIGIO sent here);
// refused with EAGAIN, a writer is still
// at work and nothing is read (writeOpen). Where leases cannot be had (a
// file of another owner without CAP_LEASE, a file system without leases
// such as NFS, fs.leases-enable = 0) the file is read and its state is
// unknown.
func readManifest(path string, check bool) ([]byte, writeState, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, writeUnknown, err
	}
	defer f.Close() // lets the lease go
	state := writeUnknown
	if check {
		var lerr error
		rc, err := f.SyscallConn()
		if err == nil {
			err = rc.Control(func(fd uintptr) { _, lerr = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_RDLCK) })
		}
		switch {
		case err != nil:
		case lerr == nil:
			state = writeClosed
		case errors.Is(lerr, unix.EAGAIN):
			return nil, writeOpen, nil
		}
	}
	data, err := io.ReadAll(f)
	return data, state, err
}
