// Package logind is the graceful node shutdown's link to systemd-logind
// while the planner runs it holds a "delay" inhibitor lock
// for shutdown, so that systemd waits for it; on logind's
// PrepareForShutdown(true) it runs the shutdown and then releases the
// lock, and on PrepareForShutdown(false) (the shutdown was cancelled) it
// cancels and takes the lock again.
//
// Bus is what it needs of logind; DBus is the real one over the system
// bus (github.com/godbus/dbus/v5). Where there is no system bus (a
// container, a host without systemd) Run logs that once and waits for
// its context: the shutdown is then started by syncpodctl node shutdown
// or the node agent's SIGTERM.
package logind
