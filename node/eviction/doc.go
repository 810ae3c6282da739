// Package eviction holds the node's eviction signals and thresholds as
// the kubelet names them: the host's signals (memory.available,
// nodefs.*, imagefs.*, pid.available), the hard thresholds in the
// kubelet's --eviction-hard form, and the pure decision of which pressure
// conditions they put the node in.
//
// It imports nothing of client-go or the node agent: its parser is
// fuzzed, and a fuzz build instruments every package it links.
package eviction
