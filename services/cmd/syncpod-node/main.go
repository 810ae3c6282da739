// Command syncpod-node joins a syncpod node to a Kubernetes cluster: it
// registers the Node, keeps its Lease, runs the pods bound to it through
// the planner and writes their status and events back. See node;
// flags: syncpod-node --help.
package main

import (
	"io"
	"os"

	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/noded"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the binary: noded.Run until SIGINT or SIGTERM.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return daemon.MainArgs(noded.Run, args, getenv, stdout, stderr)
}
