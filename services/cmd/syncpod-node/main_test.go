package main

import (
	"bytes"
	"strings"
	"testing"
)

// the agent's former pressure flags are refused, exit 2, each
// pointing to the planner's flag, before anything is opened.
func TestMovedPressureFlagsExitTwo(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--kubeconfig=/nonexistent", "--node-name=n", "--metrics-listen=",
		"--eviction-hard=memory.available<1Gi", "--eviction-pressure-transition-period=1m", "--image-fs-dir=/var"},
		func(string) string { return "" }, &out, &errb)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", code, errb.String())
	}
	for _, want := range []string{"syncpod-planner --eviction-hard", "syncpod-planner --eviction-pressure-transition-period", "syncpod-planner --image-fs-dir"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q does not say %q", errb.String(), want)
		}
	}
}
