package eviction

import "github.com/syncpod/syncpod/planner/hostsignals"

// Signals are the host's eviction signals, as the kubelet names them:
// memory.available, nodefs.available and .inodesFree, imagefs.available
// and .inodesFree, pid.available. A zero capacity means "not measured"
// (never pressure). The planner's eviction loop reads the same ones.
type Signals = hostsignals.Signals

// HostReader reads the host's eviction signals.
type HostReader = hostsignals.HostReader

// HostReaderFunc adapts a function to HostReader.
type HostReaderFunc = hostsignals.HostReaderFunc

// ReadSignals is the host's HostReader (hostsignals.ReadSignals).
func ReadSignals(nodeFsDir, imageFsDir string) HostReader {
	return hostsignals.ReadSignals(nodeFsDir, imageFsDir)
}
