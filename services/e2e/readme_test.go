package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeCommand is one `$ ` line (with its continuations) of a console
// block of README.md, and the output the README shows under it.
type readmeCommand struct {
	line     int // in README.md
	command  string
	expected []string
}

// readmeCommands returns the commands of the console blocks in the
// README section whose heading starts with heading.
func readmeCommands(t *testing.T, readme, heading string) []readmeCommand {
	t.Helper()
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "## "+heading) {
			start = i + 1
			break
		}
	}
	if start < 0 {
		t.Fatalf("README.md has no section %q", heading)
	}
	var cmds []readmeCommand
	inBlock, inOutput := false, false
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") {
			break
		}
		switch {
		case !inBlock && strings.HasPrefix(l, "```console"):
			inBlock = true
		case inBlock && strings.HasPrefix(l, "```"):
			inBlock, inOutput = false, false
		case !inBlock:
		case strings.HasPrefix(l, "$ "):
			c := readmeCommand{line: i + 1, command: strings.TrimPrefix(l, "$ ")}
			for strings.HasSuffix(c.command, "\\") && i+1 < len(lines) {
				i++
				c.command = strings.TrimSuffix(c.command, "\\") + " " + strings.TrimSpace(lines[i])
			}
			cmds = append(cmds, c)
			inOutput = true
		case strings.TrimSpace(l) == "" || strings.HasPrefix(l, "# "):
			inOutput = false
		case inOutput:
			cmds[len(cmds)-1].expected = append(cmds[len(cmds)-1].expected, l)
		}
	}
	if len(cmds) == 0 {
		t.Fatalf("README.md section %q has no console commands", heading)
	}
	return cmds
}

// firstField is the first whitespace-separated word of s.
func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// outputMatches checks the shape of out against the README's expected
// lines: the first word of each shown line (bar "..." elisions) starts a
// line of out, in the same order. Ages, uids and counts may differ.
func outputMatches(expected []string, out string) (bool, string) {
	got := strings.Split(out, "\n")
	at := 0
	for _, e := range expected {
		want := firstField(e)
		if want == "" || strings.HasPrefix(want, "...") {
			continue
		}
		found := false
		for ; at < len(got); at++ {
			if firstField(got[at]) == want {
				found = true
				at++
				break
			}
		}
		if !found {
			return false, e
		}
	}
	return true, ""
}

// TestReadmeSessions runs the README's "A first session" and "Talking to
// it with grpcurl" blocks, as written, against `make run` (its sockets in
// a directory of the test's, its metrics on free ports), so the README cannot
// drift from what the binaries do. Outputs are checked for shape, not
// timings.
func TestReadmeSessions(t *testing.T) {
	// Not parallel: the examples it applies run as host processes on
	// crisim and share host paths (the hooks example's greeting in /tmp)
	// with TestExamples' copies. It is the one test that builds into
	// bin/; the others that run make use bin dirs of their own.
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	cmds := append(readmeCommands(t, readme, "A first session"), readmeCommands(t, readme, "Talking to it with grpcurl")...)

	r := startMakeRun(t, "") // the README's commands use bin/
	replacer := strings.NewReplacer(".tmp/run/", r.runDir+"/")
	// The README's grpcurl lines name the sockets under $SOCKETS, as
	// make run prints them; syncpodctl finds them by SYNCPOD_SERVER, ...
	// here, in place of the default runtime directory.
	env := append(os.Environ(), "SOCKETS="+r.sockets,
		"SYNCPOD_SERVER="+r.planner, "SYNCPOD_EXECUTOR="+r.executor, "SYNCPOD_PLEG="+r.pleg)

	for _, c := range cmds {
		command := replacer.Replace(c.command)
		streams := strings.Contains(c.command, "# streams until Ctrl-C")
		wantError := len(c.expected) > 0 && strings.HasPrefix(c.expected[0], "ERROR:")
		// Reads may have to wait for the node to get there ("after ~20
		// s"); writes run once.
		retry := !streams && !strings.Contains(c.command, "apply") && !strings.Contains(c.command, "delete") &&
			!strings.Contains(c.command, "ApplyPod") && !strings.Contains(c.command, "DeletePod")
		began := time.Now()
		deadline := began.Add(60 * time.Second)
		for {
			out, runErr := runReadmeCommand(root, env, command, streams)
			ok, missing := outputMatches(c.expected, out)
			var problem string
			switch {
			case wantError && runErr == nil:
				problem = "succeeded, but the README shows an error"
			case !wantError && runErr != nil:
				problem = "failed: " + runErr.Error()
			case !ok:
				problem = "output has no line starting like " + strings.TrimSpace(missing)
			}
			if problem == "" {
				t.Logf("README.md:%d ok after %s", c.line, time.Since(began).Round(100*time.Millisecond))
				break
			}
			if !retry || time.Now().After(deadline) {
				t.Errorf("README.md:%d: $ %s\n%s\noutput:\n%s", c.line, c.command, problem, out)
				break
			}
			time.Sleep(time.Second)
		}
	}
}

// runReadmeCommand runs command with bash in dir. A streaming command
// runs for 3 s and is then interrupted, as a user would with Ctrl-C.
func runReadmeCommand(dir string, env []string, command string, streams bool) (string, error) {
	// Generous: `delete` waits until the pods are gone, and a pod deleted
	// while its container waits out a crash-loop back-off has been seen to
	// take over 30 s (see the session note).
	timeout := 2 * time.Minute
	if streams {
		timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if streams && ctx.Err() != nil {
		// Interrupted as intended: what it printed until then counts.
		var ee *exec.ExitError
		if err == nil || errors.As(err, &ee) {
			return string(out), nil
		}
	}
	return string(out), err
}
