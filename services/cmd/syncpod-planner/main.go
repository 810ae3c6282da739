// Command syncpod-planner is the planner: it holds the desired pods, runs per-pod sync workers and answers dry-run plans.
// See docs/design.md; flags: syncpod-planner --help.
package main

import (
	"io"
	"os"

	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/plannerd"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the binary: plannerd.Run until SIGINT or SIGTERM.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return daemon.MainArgs(plannerd.Run, args, getenv, stdout, stderr)
}
