// Package boltfiletest holds the test harness for storage faults a host
// causes (a read-only mount, a directory the service cannot write, a full
// disk), shared by the boltfile tests and the stores built on it: each
// scenario plays in a child process on a private tmpfs in its own mount
// namespace, so nothing is ever mounted on the host. DamagedFiles plays
// the damaged files (empty, garbage) a service must refuse to open.
package boltfiletest
