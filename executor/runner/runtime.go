package runner

import "github.com/syncpod/syncpod/executor/runtimeclient"

// Runtime returns the CRI runtime the runner drives, for the executor's
// read-only streaming handlers (container logs).
func (r *Runner) Runtime() runtimeclient.RuntimeAPI { return r.rt }
