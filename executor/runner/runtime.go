package runner

import "github.com/syncpod/syncpod/executor/cri"

// Runtime returns the CRI runtime the runner drives, for the executor's
// read-only streaming handlers (container logs).
func (r *Runner) Runtime() cri.RuntimeAPI { return r.rt }
