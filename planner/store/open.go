package store

import (
	"time"

	"github.com/syncpod/syncpod/internal/boltfile"
)

// What to do about a damaged file, said in every ErrCorrupt message
// ({path} is the file's path).
const corruptAdvice = "stop the planner, move the file aside (mv {path} {path}.corrupt) and restore it from a backup; " +
	"starting without it makes the planner forget every desired pod, and housekeeping then removes their containers as orphans"

// fileOptions is how the planner opens its file and words what goes
// wrong with it: boltfile does the opening (atomic create, corrupt and
// locked files, host faults), this package says what it costs the planner.
func fileOptions(timeout time.Duration) boltfile.Options {
	return boltfile.Options{Timeout: timeout, Service: "planner", CorruptAdvice: corruptAdvice}
}
