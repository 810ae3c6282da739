// Package ctl is syncpodctl, the kubectl-like command line for syncpod:
// apply, get, describe, delete, plan, events, backoffs and logs. Run is the
// whole program with its inputs and outputs passed in, so tests drive it
// against in-process servers.
package ctl
