package backoff

import (
	"time"

	"github.com/syncpod/syncpod/internal/boltfile"
)

// What to do about a damaged file, said in every ErrCorrupt message
// ({path} is the file's path).
const corruptAdvice = "stop the executor and move the file aside (mv {path} {path}.corrupt) or restore it from a backup; " +
	"starting without it only forgets the crash-loop back-off delays: a crashing container restarts right away once, then backs off again from the initial delay"

// fileOptions is how the executor opens its file and words what goes
// wrong with it: boltfile does the opening (atomic create, corrupt and
// locked files, host faults), this package says what it costs the executor.
func fileOptions(timeout time.Duration) boltfile.Options {
	return boltfile.Options{Timeout: timeout, Service: "executor", CorruptAdvice: corruptAdvice}
}
