// Package e2e holds end-to-end tests that build the syncpod binaries and
// run them as real processes on loopback addresses and unix sockets.
//
// The lifecycle tests (issue 7) each start a whole node: syncpod-crisim in
// process mode on a unix socket in a short temporary directory, the
// executor (1 s / 4 s crash-loop back-off) and the PLEG on it, and the
// planner driving both, with a manifest directory and short resync and
// housekeeping periods. They talk to the planner through syncpodctl's
// package and the generated gRPC clients, and to crisim through a CRI
// client. At cleanup every process is stopped with SIGTERM in dependency
// order, and the test fails if a container process outlives crisim.
// Set SYNCPOD_E2E_LOG_DIR to keep every process's full log
// (<dir>/<test>/<binary>-<pid>.log); on failure the tail of each log is
// printed anyway.
package e2e
