// Command syncpod-pleg is the pod lifecycle event generator: it watches the CRI runtime and streams lifecycle events.
// See docs/design.md; flags: syncpod-pleg --help.
package main

import (
	"io"
	"os"

	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/plegd"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the binary: plegd.Run until SIGINT or SIGTERM.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return daemon.MainArgs(plegd.Run, args, getenv, stdout, stderr)
}
