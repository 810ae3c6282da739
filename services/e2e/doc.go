// Package e2e holds end-to-end tests that build the syncpod binaries and
// run them as real processes on loopback addresses and unix sockets.
package e2e
