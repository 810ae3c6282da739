package server

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/services/server/access"
)

func newFlagSet() (*flag.FlagSet, *Flags) {
	fs := flag.NewFlagSet("syncpod-test", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	return fs, RegisterFlags(fs, Defaults{Listen: "127.0.0.1:7001", MetricsListen: "127.0.0.1:9101"})
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseEnvironmentFallback(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		listen  string
		level   string
		drain   time.Duration
		wantErr string
	}{
		{name: "defaults", listen: "127.0.0.1:7001", level: "info", drain: 10 * time.Second},
		{name: "env fills unset flags", env: map[string]string{"SYNCPOD_LISTEN": "unix:///tmp/p.sock", "SYNCPOD_LOG_LEVEL": "debug", "SYNCPOD_SHUTDOWN_TIMEOUT": "3s"},
			listen: "unix:///tmp/p.sock", level: "debug", drain: 3 * time.Second},
		{name: "command line wins over env", args: []string{"--listen=127.0.0.1:1"}, env: map[string]string{"SYNCPOD_LISTEN": "127.0.0.1:2"},
			listen: "127.0.0.1:1", level: "info", drain: 10 * time.Second},
		{name: "bad env value names the variable", env: map[string]string{"SYNCPOD_SHUTDOWN_TIMEOUT": "soon"}, wantErr: "SYNCPOD_SHUTDOWN_TIMEOUT"},
		{name: "unknown flag", args: []string{"--bogus"}, wantErr: "bogus"},
		{name: "stray argument", args: []string{"serve"}, wantErr: `unexpected argument "serve"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, f := newFlagSet()
			err := Parse(fs, tc.args, env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want it to mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if f.Listen != tc.listen || f.LogLevel != tc.level || f.ShutdownTimeout != tc.drain {
				t.Fatalf("got listen=%q level=%q drain=%s, want %q %q %s", f.Listen, f.LogLevel, f.ShutdownTimeout, tc.listen, tc.level, tc.drain)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	if got := EnvName("metrics-listen"); got != "SYNCPOD_METRICS_LISTEN" {
		t.Fatalf("EnvName = %q", got)
	}
}

func TestValidateReportsEveryBadFlag(t *testing.T) {
	f := &Flags{Listen: "nope", MetricsListen: "http://x:1", LogLevel: "loud", LogFormat: "xml", ShutdownTimeout: 0}
	err := f.Validate()
	if err == nil {
		t.Fatal("Validate accepted bad flags")
	}
	for _, want := range []string{"--listen", "--metrics-listen", "--log-level", "--log-format", "--shutdown-timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestValidateProfilingNeedsTheMetricsAddress(t *testing.T) {
	f := &Flags{Listen: "127.0.0.1:0", InsecureTCP: true, LogLevel: "info", LogFormat: "text", ShutdownTimeout: time.Second, Profiling: true}
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "--profiling") {
		t.Errorf("--profiling with no --metrics-listen: %v, want an error naming --profiling", err)
	}
	f.MetricsListen = "127.0.0.1:0"
	if err := f.Validate(); err != nil {
		t.Errorf("--profiling with --metrics-listen: %v", err)
	}
}

func TestStart(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		done     bool
		code     int
		stdout   string
		stderrRe string
	}{
		{name: "normal start continues", args: []string{"--listen=127.0.0.1:0", "--insecure-tcp"}, done: false},
		{name: "version", args: []string{"--version"}, done: true, code: 0, stdout: "syncpod-test " + access.Version},
		{name: "bad flag exits 2 with reason", args: []string{"--log-level=loud"}, done: true, code: 2, stderrRe: "--log-level"},
		{name: "bad env exits 2 with reason", env: map[string]string{"SYNCPOD_LOG_FORMAT": "xml"}, done: true, code: 2, stderrRe: "--log-format"},
		{name: "help exits 0", args: []string{"--help"}, done: true, code: 0},
		{name: "healthcheck of nothing fails", args: []string{"healthcheck", "--listen=unix:///nonexistent/x.sock"}, done: true, code: 1, stderrRe: "healthcheck"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, f := newFlagSet()
			var out, errOut bytes.Buffer
			done, code := Start(fs, f, tc.args, env(tc.env), &out, &errOut)
			if done != tc.done || code != tc.code {
				t.Fatalf("Start = (%v, %d), want (%v, %d); stderr: %s", done, code, tc.done, tc.code, errOut.String())
			}
			if tc.stdout != "" && !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout %q, want %q", out.String(), tc.stdout)
			}
			if tc.stderrRe != "" && !strings.Contains(errOut.String(), tc.stderrRe) {
				t.Errorf("stderr %q, want it to mention %q", errOut.String(), tc.stderrRe)
			}
		})
	}
}

// TestStartChecksTheBinarysFlags: the binary's checks run after the
// common flags, a failing one exits 2 with its reason; --version and a
// healthcheck do not run them (a healthcheck needs no --kubeconfig).
func TestStartChecksTheBinarysFlags(t *testing.T) {
	failing := func() error { return errors.New("--kubeconfig: required") }
	tests := []struct {
		name   string
		args   []string
		done   bool
		code   int
		stderr string
	}{
		{name: "a failing check exits 2 with its reason", args: []string{"--listen=127.0.0.1:0", "--insecure-tcp"}, done: true, code: 2, stderr: "syncpod-test: --kubeconfig: required"},
		{name: "version skips the checks", args: []string{"--version"}, done: true, code: 0},
		{name: "healthcheck skips the checks", args: []string{"healthcheck", "--listen=unix:///nonexistent/x.sock"}, done: true, code: 1, stderr: "healthcheck"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, f := newFlagSet()
			var out, errOut bytes.Buffer
			done, code := Start(fs, f, tc.args, env(nil), &out, &errOut, func() error { return nil }, failing)
			if done != tc.done || code != tc.code {
				t.Fatalf("Start = (%v, %d), want (%v, %d); stderr: %s", done, code, tc.done, tc.code, errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.stderr) || (tc.stderr == "" && errOut.Len() > 0) {
				t.Errorf("stderr %q, want %q", errOut.String(), tc.stderr)
			}
		})
	}
	fs, f := newFlagSet()
	var out, errOut bytes.Buffer
	if done, code := Start(fs, f, []string{"--listen=127.0.0.1:0", "--insecure-tcp"}, env(nil), &out, &errOut, func() error { return nil }); done || code != 0 {
		t.Errorf("passing checks: Start = (%v, %d), want to continue", done, code)
	}
}

func TestSplitAddress(t *testing.T) {
	tests := []struct {
		in, network, address string
		bad                  bool
	}{
		{in: "127.0.0.1:7001", network: "tcp", address: "127.0.0.1:7001"},
		{in: "tcp://[::1]:80", network: "tcp", address: "[::1]:80"},
		{in: "unix:///run/s.sock", network: "unix", address: "/run/s.sock"},
		{in: "unix://", bad: true},
		{in: "", bad: true},
		{in: "http://x:1", bad: true},
		{in: "localhost", bad: true},
	}
	for _, tc := range tests {
		n, a, err := SplitAddress(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("SplitAddress(%q) accepted", tc.in)
			}
			continue
		}
		if err != nil || n != tc.network || a != tc.address {
			t.Errorf("SplitAddress(%q) = %q, %q, %v", tc.in, n, a, err)
		}
	}
}
