package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The compose test needs a Docker engine, which it starts itself with
// mk/dockerd.sh (root only): private data root, exec root and socket, no
// iptables rules, sysctls or docker0. Missing packages or no root is a
// loud skip, or a failure when SYNCPOD_TEST_REQUIRE_DOCKER=1 (CI, root).

func dockerUnavailable(t *testing.T, why string) {
	t.Helper()
	msg := "DOCKER ENGINE NOT AVAILABLE (" + why + "): the compose test cannot run; as root `make dockerd-deps` installs docker.io and docker-compose"
	if os.Getenv("SYNCPOD_TEST_REQUIRE_DOCKER") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// hostNetState is what the engine must leave as it found it: the
// iptables rules (counters and comments dropped) and the network links.
type hostNetState struct {
	iptables []string
	links    map[string]bool
}

func snapshotHostNet(t *testing.T) hostNetState {
	t.Helper()
	s := hostNetState{links: map[string]bool{}}
	if out, err := exec.Command("iptables-save").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			// Chain lines carry packet counters: keep the policy only.
			if strings.HasPrefix(l, ":") {
				l = regexp.MustCompile(`\s*\[\d+:\d+\]$`).ReplaceAllString(l, "")
			}
			s.iptables = append(s.iptables, l)
		}
	}
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatalf("ip link: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			s.links[strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0]] = true
		}
	}
	return s
}

// compose is one compose implementation run against the private engine.
type compose struct {
	t       *testing.T
	argv    []string // the implementation's command
	root    string
	project string
	env     []string
}

func (c *compose) run(profiles string, args ...string) string {
	c.t.Helper()
	argv := append(append(append([]string{}, c.argv[1:]...), "-p", c.project, "-f", filepath.Join(c.root, "deploy", "compose.yaml")), args...)
	cmd := exec.Command(c.argv[0], argv...)
	cmd.Dir = c.root
	cmd.Env = c.env
	if profiles != "" {
		cmd.Env = append(cmd.Env, "COMPOSE_PROFILES="+profiles)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", c.argv[0], strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// docker runs the docker CLI against the private engine.
func docker(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("docker", args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// containers maps the project's service names to container ids.
func (c *compose) containers() map[string]string {
	c.t.Helper()
	m := map[string]string{}
	out := docker(c.t, c.env, "ps", "-a", "--filter", "label=com.docker.compose.project="+c.project,
		"--format", `{{.ID}} {{.Label "com.docker.compose.service"}}`)
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			m[f[1]] = f[0]
		}
	}
	return m
}

// waitHealthy waits until every named service's container is healthy.
func (c *compose) waitHealthy(services ...string) {
	c.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctrs := c.containers()
		var notYet []string
		for _, s := range services {
			id, ok := ctrs[s]
			if !ok {
				notYet = append(notYet, s+" (no container)")
				continue
			}
			h := docker(c.t, c.env, "inspect", "-f", "{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}", id)
			if h != "healthy" {
				notYet = append(notYet, s+" ("+h+")")
			}
		}
		if len(notYet) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("not healthy after 3 minutes: %v\n%s", notYet, c.run("", "logs", "--tail", "30"))
		}
		time.Sleep(time.Second)
	}
}

// grpcurlJSON calls a method through grpcurl (its command and TLS flags)
// and decodes its JSON answer.
func grpcurlJSON(t *testing.T, grpcurl []string, addr, method, req string, into any) error {
	t.Helper()
	args := append(append([]string{}, grpcurl[1:]...), "-max-time", "10", "-d", req, addr, method)
	out, err := exec.Command(grpcurl[0], args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("grpcurl %s: %v: %s", method, err, out)
	}
	if err := json.Unmarshal(out, into); err != nil {
		return fmt.Errorf("grpcurl %s: %v: %s", method, err, out)
	}
	return nil
}

type podState struct {
	uid, phase string
}

func getPod(t *testing.T, grpcurl []string, planner, name string) (podState, error) {
	var resp struct {
		Record struct {
			Pod    struct{ UID string }
			Status struct{ Phase string }
		}
	}
	err := grpcurlJSON(t, grpcurl, planner, "syncpod.planner.v1.PlannerService/GetPod", `{"pod":{"name":"`+name+`"}}`, &resp)
	return podState{uid: resp.Record.Pod.UID, phase: resp.Record.Status.Phase}, err
}

// backoffDelay is the crash-loop delay the executor holds for a pod's
// container, 0 when there is none.
func backoffDelay(t *testing.T, grpcurl []string, executor, pod string) (time.Duration, error) {
	var resp struct {
		Entries []struct {
			PodName string
			Delay   string
		}
	}
	if err := grpcurlJSON(t, grpcurl, executor, "syncpod.executor.v1.ExecutorService/ListBackoffs", `{}`, &resp); err != nil {
		return 0, err
	}
	for _, e := range resp.Entries {
		if e.PodName == pod {
			return time.ParseDuration(e.Delay)
		}
	}
	return 0, nil
}

// retryFor retries f every second for up to d.
func retryFor(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after %s: %v", what, d, err)
		}
		time.Sleep(time.Second)
	}
}

// TestComposeDeployment brings deploy/compose.yaml up for real, offline,
// with Debian's docker-compose 1.29.2 and the current Docker Compose
// (currentCompose): images from
// `make images`, every healthcheck passing, a pod applied through grpcurl
// on the published port and Running, a crash loop whose back-off survives
// `restart executor` and a kill -9 of the planner, Prometheus (profile
// monitoring) with every target up and syncpod_ series, and `down -v`
// leaving nothing. The engine is private and leaves the host's iptables
// and links as they were.
func TestComposeDeployment(t *testing.T) {
	// Alongside the other slow tests: most of its time is the engine and
	// compose waiting. Its engine, ports and images are its own.
	t.Parallel()
	root := repoRoot(t)
	if os.Getuid() != 0 {
		dockerUnavailable(t, "not root")
	}
	for _, b := range []string{"dockerd", "docker", "docker-compose", "iptables-save"} {
		if _, err := exec.LookPath(b); err != nil {
			dockerUnavailable(t, b+" not installed")
		}
	}
	grpcurl := os.Getenv("SYNCPOD_TEST_GRPCURL")
	if grpcurl == "" {
		grpcurl = filepath.Join(root, "bin", "grpcurl")
	}
	if _, err := os.Stat(grpcurl); err != nil {
		t.Fatalf("grpcurl: %v (make tools installs it)", err)
	}
	current := currentCompose(t, root)

	before := snapshotHostNet(t)
	dir := t.TempDir()
	dockerdSh := filepath.Join(root, "mk", "dockerd.sh")
	up := exec.Command(dockerdSh, "up", dir)
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("mk/dockerd.sh up: %v\n%s", err, out)
	}
	stopped := false
	stopEngine := func() {
		if stopped {
			return
		}
		stopped = true
		if out, err := exec.Command(dockerdSh, "down", dir).CombinedOutput(); err != nil {
			t.Errorf("mk/dockerd.sh down: %v\n%s", err, out)
		}
	}
	t.Cleanup(stopEngine)
	env := []string{"DOCKER_HOST=unix://" + filepath.Join(dir, "docker.sock")}
	for _, kv := range makeEnv() {
		if !strings.HasPrefix(kv, "DOCKER_HOST=") && !strings.HasPrefix(kv, "COMPOSE_") && !strings.HasPrefix(kv, "SYNCPOD_") {
			env = append(env, kv)
		}
	}

	began := time.Now()
	// Its own bin dir: the README and make-run tests, running at the same
	// time, build and run bin/. Seeded from bin/, so make images links
	// nothing that is up to date.
	mk := exec.Command("make", "--no-print-directory", "images", "BIN="+seededBin(t))
	mk.Dir, mk.Env = root, env
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make images: %v\n%s", err, out)
	}
	t.Logf("make images took %s", time.Since(began).Round(100*time.Millisecond))
	for _, img := range []string{"syncpod-planner", "syncpod-executor", "syncpod-pleg", "syncpod-crisim"} {
		labels := docker(t, env, "inspect", "-f", `{{index .Config.Labels "org.opencontainers.image.revision"}} {{.Config.User}}`, "syncpod/"+img+":latest")
		if f := strings.Fields(labels); len(f) != 2 || f[0] == "" || f[1] != "65532:65532" {
			t.Errorf("syncpod/%s: revision label and user = %q, want a revision and 65532:65532", img, labels)
		}
	}

	impls := []struct{ name, bin string }{{"docker-compose-1.29", "docker-compose"}}
	if current != "" {
		impls = append(impls, struct{ name, bin string }{"current-compose", current})
	}
	var bridges []string
	for i, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			bridges = append(bridges, composeSession(t, root, grpcurl, []string{impl.bin}, fmt.Sprintf("sptest%d", i), env)...)
		})
	}

	stopEngine()
	after := snapshotHostNet(t)
	for _, b := range bridges {
		if after.links[b] {
			t.Errorf("bridge %s of the compose network is still there", b)
		}
	}
	for l := range after.links {
		if !before.links[l] && (strings.HasPrefix(l, "docker") || strings.HasPrefix(l, "br-") || strings.HasPrefix(l, "veth")) {
			// Another engine on this machine may have made it: only ours
			// (the bridges above) are errors; report the rest.
			t.Logf("note: link %s appeared during the test (not ours)", l)
		}
	}
	if strings.Join(before.iptables, "\n") != strings.Join(after.iptables, "\n") {
		var ours []string
		for _, l := range after.iptables {
			if strings.Contains(l, "10.213.") || strings.Contains(l, "DOCKER") {
				ours = append(ours, l)
			}
		}
		sort.Strings(ours)
		if len(ours) > 0 {
			t.Errorf("iptables rules changed:\n%s", strings.Join(ours, "\n"))
		} else {
			t.Logf("note: iptables changed during the test, but not by docker")
		}
	}
}

// currentCompose is the current Docker Compose (v5, the `docker compose`
// plugin run standalone) to test beside Debian's docker-compose 1.29.2:
// SYNCPOD_TEST_COMPOSE_CURRENT, else the build `make compose-build` keeps
// outside the clone. Without one the test goes on with 1.29.2 alone and
// says so loudly, or fails when SYNCPOD_TEST_REQUIRE_DOCKER=1 (CI, root).
func currentCompose(t *testing.T, root string) string {
	t.Helper()
	bin := os.Getenv("SYNCPOD_TEST_COMPOSE_CURRENT")
	if bin == "" {
		out, err := exec.Command(filepath.Join(root, "mk", "composebin.sh"), "--cached").Output()
		if err != nil {
			msg := "CURRENT DOCKER COMPOSE NOT BUILT (`make compose-build` builds it)"
			if os.Getenv("SYNCPOD_TEST_REQUIRE_DOCKER") == "1" {
				t.Fatal(msg)
			}
			t.Log(msg + ": deploy/compose.yaml is brought up with docker-compose 1.29.2 only")
			return ""
		}
		bin = strings.TrimSpace(string(out))
	}
	out, err := exec.Command(bin, "version", "--short").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	t.Logf("current Docker Compose: %s (%s)", strings.TrimSpace(string(out)), bin)
	return bin
}

// composeSession runs the whole scenario with one implementation and
// returns the names of the bridges its network used.
func composeSession(t *testing.T, root, grpcurlBin string, impl []string, project string, engineEnv []string) []string {
	ports := quietPorts(t, 8)
	names := []string{"PLANNER_PORT", "EXECUTOR_PORT", "PLEG_PORT", "PLANNER_METRICS_PORT", "EXECUTOR_METRICS_PORT", "PLEG_METRICS_PORT", "CRISIM_METRICS_PORT", "PROMETHEUS_PORT"}
	env := append([]string{}, engineEnv...)
	for i, n := range names {
		env = append(env, "SYNCPOD_"+n+"="+strconv.Itoa(ports[i]))
	}
	planner := "127.0.0.1:" + strconv.Itoa(ports[0])
	executor := "127.0.0.1:" + strconv.Itoa(ports[1])
	prometheus := "127.0.0.1:" + strconv.Itoa(ports[7])
	c := &compose{t: t, argv: impl, root: root, project: project, env: env}
	downDone := false
	t.Cleanup(func() {
		if !downDone {
			c.run("crisim,monitoring", "down", "-v", "--remove-orphans")
		}
	})

	began := time.Now()
	c.run("", "up", "-d")
	c.waitHealthy("crisim", "executor", "pleg", "planner")
	t.Logf("up -d until every service healthy: %s", time.Since(began).Round(100*time.Millisecond))
	netIDs := docker(t, env, "network", "ls", "-q", "--no-trunc", "--filter", "label=com.docker.compose.project="+project)
	var bridges []string
	for _, id := range strings.Fields(netIDs) {
		bridges = append(bridges, "br-"+id[:12])
	}
	if len(bridges) == 0 {
		t.Fatalf("no compose network for project %s", project)
	}

	// The ports are published on 127.0.0.1 only.
	for _, b := range strings.Split(docker(t, env, "ps", "--filter", "label=com.docker.compose.project="+project, "--format", "{{.Ports}}"), "\n") {
		for _, p := range strings.Split(b, ", ") {
			if strings.Contains(p, "->") && !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("port published beyond loopback: %s", p)
			}
		}
	}

	// The published gRPC ports are mutual TLS with the certificates the
	// one-shot service made: copy them out, as a user would; plaintext
	// and a client without a certificate are refused, a viewer may read
	// but not write.
	pki := filepath.Join(t.TempDir(), "pki")
	docker(t, env, "cp", c.containers()["certs"]+":/pki", pki)
	ca := filepath.Join(pki, "ca.crt")
	as := func(who string) []string {
		return []string{grpcurlBin, "-cacert", ca, "-cert", filepath.Join(pki, who+".crt"), "-key", filepath.Join(pki, who+".key")}
	}
	grpcurl := as("admin")
	var ignored map[string]any
	for _, tc := range []struct {
		name    string
		grpcurl []string
		want    string
	}{
		{"plaintext", []string{grpcurlBin, "-plaintext"}, ""},
		{"no client certificate", []string{grpcurlBin, "-cacert", ca}, ""},
		{"viewer writes", as("viewer"), "PermissionDenied"},
	} {
		err := grpcurlJSON(t, tc.grpcurl, planner, "syncpod.planner.v1.PlannerService/DeletePod", `{"pod":{"name":"x"}}`, &ignored)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: DeletePod on the published port = %v, want refused %s", tc.name, err, tc.want)
		}
	}
	if err := grpcurlJSON(t, as("viewer"), planner, "syncpod.planner.v1.PlannerService/ListPods", `{}`, &ignored); err != nil {
		t.Errorf("viewer ListPods: %v", err)
	}
	// syncpodctl with the config the one-shot service wrote (its
	// addresses are the published ports).
	ctlOut, err := exec.Command(binary(t, "syncpodctl"), "--config", filepath.Join(pki, "config.yaml"), "get", "pods").CombinedOutput()
	if err != nil {
		t.Errorf("syncpodctl --config pki/config.yaml get pods: %v\n%s", err, ctlOut)
	}

	// A pod through grpcurl on the published port, and a crash loop.
	apply := func(name, command string) {
		var resp map[string]any
		req := `{"pod":{"name":"` + name + `","spec":{"hostNetwork":true,"containers":[{"name":"app","image":"busybox:1.36","command":["sh","-c","` + command + `"]}]}}}`
		if err := grpcurlJSON(t, grpcurl, planner, "syncpod.planner.v1.PlannerService/ApplyPod", req, &resp); err != nil {
			t.Fatal(err)
		}
	}
	apply("web", "while true; do echo tick; sleep 5; done")
	apply("crash", "echo broken >&2; exit 1")
	var web podState
	retryFor(t, 60*time.Second, "pod web Running", func() error {
		var err error
		if web, err = getPod(t, grpcurl, planner, "web"); err == nil && web.phase != "POD_PHASE_RUNNING" {
			err = fmt.Errorf("phase %s", web.phase)
		}
		return err
	})
	var delay0 time.Duration
	retryFor(t, 60*time.Second, "pod crash in back-off", func() error {
		var err error
		if delay0, err = backoffDelay(t, grpcurl, executor, "crash"); err == nil && delay0 == 0 {
			err = fmt.Errorf("no back-off entry")
		}
		return err
	})

	// The executor restarted, and the planner's process killed: the
	// restart policy brings it back; the pod and its back-off stay.
	c.run("", "restart", "executor")
	plannerID := c.containers()["planner"]
	pid := docker(t, env, "inspect", "-f", "{{.State.Pid}}", plannerID)
	if out, err := exec.Command("kill", "-9", pid).CombinedOutput(); err != nil {
		t.Fatalf("kill -9 %s (the planner's process): %v %s", pid, err, out)
	}
	retryFor(t, 60*time.Second, "planner restarted by its restart policy", func() error {
		if n := docker(t, env, "inspect", "-f", "{{.RestartCount}}", plannerID); n == "0" {
			return fmt.Errorf("restart count 0")
		}
		return nil
	})
	c.waitHealthy("crisim", "executor", "pleg", "planner")
	retryFor(t, 60*time.Second, "pod web still Running, same uid", func() error {
		p, err := getPod(t, grpcurl, planner, "web")
		if err == nil && (p.uid != web.uid || p.phase != "POD_PHASE_RUNNING") {
			err = fmt.Errorf("uid %s phase %s, want uid %s Running", p.uid, p.phase, web.uid)
		}
		return err
	})
	d, err := backoffDelay(t, grpcurl, executor, "crash")
	if err != nil {
		t.Fatal(err)
	}
	if d < delay0 {
		t.Errorf("back-off of crash after the restarts: %s, before: %s (lost or reset)", d, delay0)
	}

	// Profile monitoring: Prometheus scrapes every service.
	c.run("crisim,monitoring", "up", "-d")
	retryFor(t, 2*time.Minute, "every Prometheus target up", func() error {
		var r struct {
			Data struct {
				ActiveTargets []struct {
					Labels    map[string]string
					Health    string
					LastError string
				}
			}
		}
		if err := getJSON("http://"+prometheus+"/api/v1/targets", &r); err != nil {
			return err
		}
		up := map[string]bool{}
		for _, tg := range r.Data.ActiveTargets {
			if tg.Health == "up" {
				up[tg.Labels["job"]] = true
			}
		}
		for _, job := range []string{"planner", "executor", "pleg", "crisim"} {
			if !up[job] {
				return fmt.Errorf("job %s not up: %+v", job, r.Data.ActiveTargets)
			}
		}
		return nil
	})
	retryFor(t, time.Minute, "up == 1 for every job and a syncpod_ series", func() error {
		for _, q := range []string{`count(up == 1)`, `count({__name__=~"syncpod_.+"})`} {
			var r struct {
				Data struct {
					Result []struct{ Value []any }
				}
			}
			if err := getJSON("http://"+prometheus+"/api/v1/query?query="+url.QueryEscape(q), &r); err != nil {
				return err
			}
			if len(r.Data.Result) == 0 || len(r.Data.Result[0].Value) != 2 {
				return fmt.Errorf("%s: no result", q)
			}
			v, _ := r.Data.Result[0].Value[1].(string)
			n, _ := strconv.Atoi(v)
			if q == `count(up == 1)` && n != 4 || n == 0 {
				return fmt.Errorf("%s = %s", q, v)
			}
		}
		return nil
	})

	c.run("crisim,monitoring", "down", "-v")
	downDone = true
	for _, kind := range [][]string{{"ps", "-aq"}, {"volume", "ls", "-q"}, {"network", "ls", "-q"}} {
		args := append(append([]string{}, kind...), "--filter", "label=com.docker.compose.project="+project)
		if out := docker(t, env, args...); out != "" {
			t.Errorf("docker %s left after down -v: %s", strings.Join(kind, " "), out)
		}
	}
	return bridges
}
