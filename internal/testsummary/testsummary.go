// Package testsummary lets a test leave one line for the closing report of
// the whole suite: the counts that show a fault, flood or bad-input test
// did what it says (faults injected, inputs tried, nothing lost).
//
// `go test` prints nothing of a passing package but its "ok" line, so a
// count logged with t.Logf never reaches CI's output. Record logs the line
// and, when SYNCPOD_TEST_SUMMARY names a file, appends it there; `make
// test` sets that variable and prints the file after the tests.
package testsummary

import (
	"fmt"
	"os"
	"testing"
)

// EnvFile is the environment variable naming the file lines are appended
// to.
const EnvFile = "SYNCPOD_TEST_SUMMARY"

// Record logs "SUMMARY <test>: <message>" and appends "<test>: <message>"
// to the file named by SYNCPOD_TEST_SUMMARY, if any. Each line is written
// with one O_APPEND write, so test binaries running in parallel do not
// interleave within a line.
func Record(t testing.TB, format string, args ...any) {
	t.Helper()
	line := t.Name() + ": " + fmt.Sprintf(format, args...)
	t.Log("SUMMARY " + line)
	path := os.Getenv(EnvFile)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("test summary: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Errorf("test summary: %v", err)
	}
}
