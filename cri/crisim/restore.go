package crisim

import (
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// restore rebuilds the runtime from its state dir when it starts:
// sandboxes, containers and images come back as they were recorded. A
// RUNNING container whose shim still runs (same PID, same start time,
// same boot) is re-adopted and stays RUNNING; its exit is seen when the
// shim ends. One whose shim ended while no crisim watched becomes EXITED
// with the code the shim recorded, or, if none, with exit code 255 and
// reason "Unknown" as containerd reports it. A simulated container keeps
// running, its exit-after annotation counted from its original start.
func (r *Runtime) restore() error {
	l, err := r.store.load()
	if err != nil {
		return err
	}
	for _, p := range l.discarded {
		r.log.Warn("unreadable state file set aside: the host rebooted since it was written, so no process it names can run", "file", p+".corrupt")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range l.images {
		r.images[name] = &image{id: imageID(name), name: name}
	}
	for _, rec := range l.sandboxes {
		sb, err := sandboxFromRecord(rec)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrStateCorrupt, filepath.Join(r.store.dir, "sandboxes", rec.ID+".json"), err)
		}
		r.sandboxes[sb.id] = sb
		r.sbNames[sb.reservedAs] = sb.id
		if sb.ip.IsValid() {
			r.ips[sb.ip] = true
		}
		r.metrics.sandboxes.WithLabelValues(sandboxStateName(sb.state)).Inc()
	}
	var adopted, ended int
	for _, rec := range l.containers {
		c := containerFromRecord(rec)
		if _, ok := r.sandboxes[c.sandboxID]; !ok {
			return fmt.Errorf("%w: %s: its sandbox %q has no record", ErrStateCorrupt, filepath.Join(r.store.dir, "containers", rec.ID+".json"), c.sandboxID)
		}
		if sim, err := parseSimSpec(c.annotations); err == nil {
			c.sim = sim
		}
		if c.state == runtimeapi.ContainerState_CONTAINER_CREATED {
			// crisim may have died between its shim starting the
			// container and recording the start: the shim's started
			// file tells, and the container must not be started twice.
			// A shim still starting it (its start lock held) is waited
			// for, so that its start is not missed and repeated.
			r.awaitStartInFlight(c.id)
			if p, ok := r.store.readStarted(c.id); ok {
				c.state, c.startedAt, rec.Proc = runtimeapi.ContainerState_CONTAINER_RUNNING, p.StartedAt, p
			}
		}
		r.containers[c.id] = c
		r.ctrNames[c.reservedAs] = c.id
		r.metrics.containers.WithLabelValues(containerStateName(c.state)).Inc()
		if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		p := rec.Proc
		switch {
		case p == nil: // simulated: it never stopped
			if c.log, err = openLog(c.logPath, r.now); err != nil {
				r.log.Warn("cannot reopen a simulated container's log", "container_id", c.id, "err", err)
			}
			c.run = r.startSimulated(c, time.Duration(c.startedAt+c.sim.exitAfter.Nanoseconds()-r.nowNano()))
			adopted++
			continue
		case sameProcess(r.boot, p.BootID, p.ShimPID, p.ShimStart):
			c.run = r.adoptShim(c, *p)
			adopted++
			continue
		}
		if e, ok := r.store.readExit(c.id); ok {
			r.exitLocked(c, e.ExitCode, "", "", e.FinishedAt)
		} else {
			// The shim died without recording the exit: make sure nothing
			// of the container is left, and say the code is unknown.
			if sameProcess(r.boot, p.BootID, p.PID, p.Start) {
				_ = syscall.Kill(-p.PID, syscall.SIGKILL)
			}
			r.exitLocked(c, unknownExitCode, unknownExitReason, "the container ended while no crisim watched it; its exit code is unknown", 0)
		}
		ended++
		if err := r.saveContainerLocked(c); err != nil {
			return err
		}
	}
	r.log.Info("crisim state loaded", "state_dir", r.store.dir, "sandboxes", len(r.sandboxes), "containers", len(r.containers),
		"images", len(r.images), "readopted_running", adopted, "ended_while_down", ended)
	return nil
}
