// Command syncpod-crisim is syncpod's embedded CRI runtime: the real CRI
// gRPC API (runtime.v1) on a unix socket, with containers that are host
// processes (--mode process, the default: NO ISOLATION, the image is
// ignored) or simulated (--mode simulated, for scale tests). See package
// crisim for the behaviour; flags: syncpod-crisim --help.
package main

import (
	"io"
	"os"

	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/crisimd"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the binary: crisimd.Run until SIGINT or SIGTERM.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if code, ok := crisimd.Shim(args); ok {
		return code
	}
	return daemon.MainArgs(crisimd.Run, args, getenv, stdout, stderr)
}
