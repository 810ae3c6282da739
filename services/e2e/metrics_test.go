package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// prometheusBinary returns Debian's prometheus, or skips (loudly) or fails
// when it is missing, as SYNCPOD_TEST_REQUIRE_PROMETHEUS says.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SYNCPOD_TEST_PROMETHEUS")
	if bin == "" {
		bin = "/usr/bin/prometheus"
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("PROMETHEUS NOT AVAILABLE (%v): the metrics end-to-end test cannot run; `make prometheus-deps` as root installs it", err)
		if os.Getenv("SYNCPOD_TEST_REQUIRE_PROMETHEUS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestPrometheusScrapesEveryService runs every syncpod binary and a private
// Prometheus (Debian's) that scrapes them, and checks through Prometheus's
// own API that every target is up and serves the expected series.
func TestPrometheusScrapesEveryService(t *testing.T) {
	bin := prometheusBinary(t)
	dir := t.TempDir()
	sock := filepath.Join(shortTempDir(t), "cri.sock")
	crisim := start(t, "syncpod-crisim", "--mode=simulated", "--listen=unix://"+sock)
	cri := "--cri-endpoint=unix://" + sock
	executor := start(t, "syncpod-executor", cri, "--log-dir="+filepath.Join(dir, "logs"))
	pleg := start(t, "syncpod-pleg", cri)
	planner := start(t, "syncpod-planner", "--executor="+target(executor.grpc), "--pleg="+target(pleg.grpc))

	jobs := map[string]*proc{"planner": planner, "executor": executor, "pleg": pleg, "crisim": crisim}
	var cfg strings.Builder
	// deploy/prometheus/prometheus.yml's timing: a 1 s timeout marked a
	// target down when one /metrics reply was slow on a loaded machine.
	cfg.WriteString("global:\n  scrape_interval: 5s\n  scrape_timeout: 4s\nscrape_configs:\n")
	for job, p := range jobs {
		u, err := url.Parse(p.metrics)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs:\n      - targets: [%q]\n", job, u.Host)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackPort(t)
	prom := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr, "--log.level=warn")
	var promLog strings.Builder
	prom.Stdout, prom.Stderr = &promLog, &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = prom.Process.Kill()
		_ = prom.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", promLog.String())
		}
	})

	api := "http://" + addr + "/api/v1/"
	// Every target up, through Prometheus's eyes.
	waitFor(t, 60*time.Second, "every target up", func() (bool, string) {
		var resp struct {
			Data struct {
				ActiveTargets []struct {
					Labels    map[string]string `json:"labels"`
					Health    string            `json:"health"`
					LastError string            `json:"lastError"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if err := getJSON(api+"targets", &resp); err != nil {
			return false, err.Error()
		}
		up := 0
		var state []string
		for _, tg := range resp.Data.ActiveTargets {
			state = append(state, tg.Labels["job"]+"="+tg.Health+" "+tg.LastError)
			if tg.Health == "up" {
				up++
			}
		}
		return up == len(jobs), strings.Join(state, "; ")
	})
	// A call, whose method's series the planner makes with it.
	conn := dial(t, planner.grpc)
	defer conn.Close()
	if _, err := plannerv1.NewPlannerServiceClient(conn).ListPods(t.Context(), &plannerv1.ListPodsRequest{}); err != nil {
		t.Fatal(err)
	}
	// The series each service promises, queried from Prometheus.
	for query, want := range map[string]int{
		`up == 1`: len(jobs),
		`grpc_server_handled_total{job="planner",grpc_service="syncpod.planner.v1.PlannerService",grpc_method="ListPods",grpc_code="OK"}`: 1,
		`syncpod_executor_backoff_entries{job="executor"}`:       1,
		`syncpod_pleg_relist_duration_seconds_count{job="pleg"}`: 1,
		`syncpod_pleg_cri_list_items_total{job="pleg"}`:          2, // decoded and reused
		`syncpod_planner_pod_workers{job="planner"}`:             1,
		`go_goroutines`: len(jobs),
	} {
		waitFor(t, 30*time.Second, query, func() (bool, string) {
			var resp struct {
				Data struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			if err := getJSON(api+"query?query="+url.QueryEscape(query), &resp); err != nil {
				return false, err.Error()
			}
			return len(resp.Data.Result) == want, fmt.Sprintf("%d series, want %d", len(resp.Data.Result), want)
		})
	}
}

func getJSON(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// waitFor polls cond every 200 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %s", d, what, state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// shortTempDir is a temporary directory with a short path, for unix
// sockets (whose paths are limited to about 100 bytes).
func shortTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
