package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestBadPlegFlagsExitTwoNamingEveryProblem(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--evented=maybe", "--relist-period=-1s", "--inspect-parallelism=0", "--cri-endpoint=http://x", "--metrics-listen="},
		func(string) string { return "" }, &out, &errb)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", code, errb.String())
	}
	for _, want := range []string{"--evented", "--relist-period", "--inspect-parallelism", "--cri-endpoint"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q does not name %s", errb.String(), want)
		}
	}
}

func TestFlagsFromEnvironment(t *testing.T) {
	var out, errb bytes.Buffer
	env := map[string]string{"SYNCPOD_EVENTED": "sometimes"}
	code := run([]string{"--metrics-listen="}, func(k string) string { return env[k] }, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--evented") {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
}
