package crisim

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// The start lock closes the window between a shim being spawned and the
// shim recording, in its started file, that the container runs. crisim
// takes an flock on <state>/exits/<id>.start.lock before it spawns the
// shim and hands the locked descriptor to it; the lock belongs to the open
// file description, so it stays held from before the spawn until the shim
// ends, whether or not this crisim survives. A crisim that restarts and
// finds a CREATED container with no started file knows from a held lock
// that a shim of the crashed crisim is still starting it, and waits for
// its started file instead of letting the container be started twice.

// startLockWait bounds how long a restarting crisim waits for an
// in-flight shim to record its start (a shim records it within
// milliseconds; only a wedged host takes longer).
var startLockWait = 30 * time.Second

// takeStartLock opens (creating) the start lock at path and locks it.
func takeStartLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: a shim of an earlier crisim is still starting this container (%s is locked)", ErrFailedPrecondition, path)
		}
		return nil, fmt.Errorf("start lock %s: %w", path, err)
	}
	return f, nil
}

// awaitStartInFlight returns once no shim is starting container id: at
// once when its start lock is free (or absent), else when the shim has
// written its started file or let the lock go, or after startLockWait.
func (r *Runtime) awaitStartInFlight(id string) {
	path := r.store.startLockFile(id)
	f, err := os.Open(path)
	if err != nil {
		return // no lock file: no shim was ever spawned for it
	}
	defer f.Close()
	deadline := time.Now().Add(startLockWait)
	for first := true; ; first = false {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			return // the shim is gone (or never got the spec)
		}
		if _, ok := r.store.readStarted(id); ok {
			return
		}
		if first && r.opts.startInFlight != nil {
			r.opts.startInFlight(id)
		}
		if time.Now().After(deadline) {
			r.log.Warn("a shim of the crashed crisim still holds a container's start lock without recording a start; leaving the container CREATED",
				"container_id", id, "lock", path, "waited", startLockWait)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
