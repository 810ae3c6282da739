package runtimeclient

import (
	"sync"
	"time"
)

// Call is one CRI call as a CallLog records it.
type Call struct {
	// Op is the operation type (OpRunPodSandbox, ...).
	Op string
	// Start is when the call began; Took how long it ran.
	Start time.Time
	Took  time.Duration
	// Failed is true when it returned an error.
	Failed bool
}

// CallLog collects the CRI calls made through the Runtime and Images
// views it was given to (Runtime.WithCallLog, Images.WithCallLog), so a
// caller can tell where a pass spent its time. Safe for concurrent use: a
// pass kills containers in parallel.
type CallLog struct {
	mu    sync.Mutex
	calls []Call
}

// Calls returns the recorded calls in the order they ended.
func (l *CallLog) Calls() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Call(nil), l.calls...)
}

func (l *CallLog) add(c Call) {
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
}
