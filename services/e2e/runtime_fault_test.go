package e2e

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// A runtime fault, R-11.8, R-13.6: crisim is killed with SIGKILL under a
// churn and started again on the same socket. While it is down the PLEG's
// health turns NOT_SERVING (its relist stalls past --relist-threshold); it
// comes back SERVING after the restart. Nothing may be killed spuriously:
// the steady pods keep the very same container processes (pid and start
// time) and container ids, with their restart counts, because a runtime
// does not lose its containers; no container runs twice; and the node ends
// as the acknowledgement log says, with no process left on the host
// afterwards.
func TestRuntimeFaultCrisimSIGKILLRestart(t *testing.T) {
	t.Parallel()
	pt := trackProcesses(t)
	// crisim logs at debug: a failure report then says what became of
	// each container across the restart.
	n := startNode(t, nodeOptions{sockets: true, plegArgs: []string{"--relist-threshold=2s"}, crisimArgs: []string{"--log-level=debug"}})
	rounds := size(1, 5)
	pods, workers, ctrs := size(6, 30), size(3, 8), 2
	steady := map[string]int{"steady-0": 1, "steady-1": 1}
	for name := range steady {
		n.apply(revPod(name, ctrs, 1))
	}
	type instance struct {
		id   string
		proc hostProc
	}
	before := map[string]instance{}
	for name := range steady {
		rec := n.waitRunning(name, converge)
		for _, cs := range rec.GetStatus().GetContainerStatuses() {
			before[name+"/"+cs.GetName()] = instance{id: cs.GetContainerId()}
		}
	}
	for _, h := range n.hostProcesses() {
		key := h.env["POD"] + "/" + h.env["CTR"]
		if in, ok := before[key]; ok {
			in.proc = h
			before[key] = in
		}
	}

	began := time.Now()
	c := newChurn(t, n, "churn", pods, ctrs, workers)
	c.start()
	faults, flips := 0, 0
	for r := range rounds {
		time.Sleep(2 * time.Second)
		pt.record(n.hostProcesses())
		n.kill(n.crisim)
		faults++
		eventually(t, converge, "PLEG health NOT_SERVING while crisim is down", func() (bool, string) {
			st, err := n.plegHealth()
			return err == nil && st == healthpb.HealthCheckResponse_NOT_SERVING, fmt.Sprintf("%v %v", st, err)
		})
		n.crisim = n.restart(n.crisim)
		eventually(t, converge, "PLEG health SERVING after crisim is back", func() (bool, string) {
			st, err := n.plegHealth()
			return err == nil && st == healthpb.HealthCheckResponse_SERVING, fmt.Sprintf("%v %v", st, err)
		})
		flips++
		t.Logf("%5.1fs round %d: crisim SIGKILLed, PLEG NOT_SERVING, crisim restarted, PLEG SERVING; %s", time.Since(began).Seconds(), r+1, c.counts())
	}
	time.Sleep(time.Second)
	c.stop()
	c.settle()
	lost, _ := c.checkAcks("after the churn stopped")
	want := c.expected()
	var last convergence
	eventually(t, 2*converge, "the node agrees with the acknowledgement log, no container twice", func() (bool, string) {
		pt.record(n.hostProcesses())
		last = n.look(want, ctrs, true, steady)
		return last.ok(), last.String()
	})
	t.Logf("%5.1fs converged", time.Since(began).Seconds())

	killed := 0
	now := map[string]hostProc{}
	for _, h := range n.hostProcesses() {
		now[h.env["POD"]+"/"+h.env["CTR"]] = h
	}
	for name := range steady {
		rec, err := n.get(name)
		if err != nil {
			t.Fatalf("steady pod %s: %v", name, err)
		}
		for _, cs := range rec.GetStatus().GetContainerStatuses() {
			key := name + "/" + cs.GetName()
			in := before[key]
			if cs.GetContainerId() != in.id || cs.GetRestartCount() != 0 {
				t.Errorf("steady %s: container %s -> %s, restarts %d; want the same container, never restarted", key, in.id, cs.GetContainerId(), cs.GetRestartCount())
			}
			if h := now[key]; h.pid != in.proc.pid || h.start != in.proc.start {
				killed++
				t.Errorf("steady %s: host process %v replaced by %v across the crisim restart (killed spuriously)", key, in.proc, h)
			}
		}
	}
	summaryf(t, "faults=%d health_flips=%d %s lost=%d spurious_kills=%d duplicates=%d", faults, flips, c.counts(), lost, killed, last.duplicates)
}

// A runtime fault: a hung CRI call. A proxy between the executor and crisim
// holds calls until the executor's --cri-timeout passes: the first sandbox
// of one pod (carried out late, after the executor gave up, as a slow
// runtime would) and the first container creation of another (dropped). The
// executor must time out and the pods must still come up, with one READY
// sandbox and one instance of each container, and a pod applied after the
// hangs must not wait behind them (the executor is not wedged).
func TestRuntimeFaultHungCRICallTimesOutAndRetries(t *testing.T) {
	t.Parallel()
	pt := trackProcesses(t)
	var proxy *criProxy
	n := startNode(t, nodeOptions{
		// The timeout bounds every CRI call, not only the stalled ones:
		// 2 s was within reach of a plain call on a loaded machine.
		executorArgs: []string{"--cri-timeout=10s"},
		executorCRI: func(endpoint, dir string) string {
			proxy = startCRIProxy(t, dir, endpoint,
				&stallRule{method: methodRunPodSandbox, match: podNamed(methodRunPodSandbox, "hung-sandbox"), count: 1, late: true},
				&stallRule{method: methodCreateContainer, match: podNamed(methodCreateContainer, "hung-create"), count: 1},
			)
			return proxy.endpoint
		},
	})
	ctrs := 2
	n.apply(revPod("hung-sandbox", ctrs, 1))
	n.apply(revPod("hung-create", ctrs, 1))
	eventually(t, converge, "both calls stalled", func() (bool, string) {
		a, _ := proxy.counts(methodRunPodSandbox)
		b, _ := proxy.counts(methodCreateContainer)
		return a == 1 && b == 1, fmt.Sprintf("RunPodSandbox %d, CreateContainer %d stalled", a, b)
	})
	n.apply(revPod("after", ctrs, 1))
	want := map[string]int{"hung-sandbox": 1, "hung-create": 1, "after": 1}
	var last convergence
	eventually(t, 2*converge, "every pod running once, in one sandbox", func() (bool, string) {
		pt.record(n.hostProcesses())
		last = n.look(want, ctrs, true, nil)
		return last.ok(), last.String()
	})
	sbStalled, sbLate := proxy.counts(methodRunPodSandbox)
	ccStalled, _ := proxy.counts(methodCreateContainer)
	if sbLate != 1 {
		t.Errorf("the stalled RunPodSandbox was carried out %d times after the timeout, want 1 (the test's premise)", sbLate)
	}
	page := scrape(t, n.executor.metrics)
	timeouts := metricSum(page, "syncpod_executor_runtime_operations_errors_total", `operation_type="run_podsandbox"`) +
		metricSum(page, "syncpod_executor_runtime_operations_errors_total", `operation_type="create_container"`)
	if timeouts < 2 {
		t.Errorf("executor counted %v failed run_podsandbox/create_container calls, want at least the 2 that hung", timeouts)
	}
	for _, name := range []string{"hung-sandbox", "hung-create"} {
		rec, err := n.get(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", name, summary(rec))
	}
	var rec *plannerv1.PodRecord
	rec, _ = n.get("after")
	t.Logf("after: %s", summary(rec))
	summaryf(t, "faults=%d (RunPodSandbox hung %d, carried out late %d; CreateContainer hung and dropped %d) executor_call_errors=%v lost=%d duplicates=%d", sbStalled+ccStalled, sbStalled, sbLate, ccStalled, timeouts, last.missing, last.duplicates)
}

// A runtime fault, R-13.9, R-13.6: one pod's runtime calls hang. A proxy
// between the PLEG and crisim holds every ContainerStatus of that pod's
// container until the PLEG gives up, and the PLEG gives up only after
// --inspect-timeout=5m: as far as this test can tell, the call never
// returns. Meanwhile other pods are created, one of them crash-looping:
// each must reach Running and the crash loop must go on being seen and
// restarted, and the PLEG must stay SERVING throughout, with a relist
// threshold (10 s) far below the hang. (The kubelet's relist waited on
// such calls one after the other, took minutes, and its node went
// NotReady.)
func TestRuntimeFaultOnePodsHungStatusCallsDelayNoOtherPod(t *testing.T) {
	t.Parallel()
	var (
		proxy  *criProxy
		hungID atomic.Value // the container whose status calls hang
	)
	hungID.Store("")
	n := startNode(t, nodeOptions{
		// Relist mode (the proxy forwards unary calls only), as the
		// kubelet's PLEG that went wrong.
		plegArgs: []string{"--evented=off", "--inspect-timeout=5m", "--relist-threshold=10s"},
		plegCRI: func(endpoint, dir string) string {
			proxy = startCRIProxy(t, dir, endpoint, &stallRule{method: methodContainerStatus, count: math.MaxInt, match: func(req []byte) bool {
				var r runtimeapi.ContainerStatusRequest
				id := hungID.Load().(string)
				return id != "" && proto.Unmarshal(req, &r) == nil && r.GetContainerId() == id
			}})
			return proxy.endpoint
		},
	})
	n.apply(pod("hung", sleeper("main")))
	hungID.Store(cstatus(n.waitRunning("hung", converge), "main").GetContainerId())
	// A change to the hung pod, so the PLEG must inspect it: its
	// container is restarted in place by a spec change.
	n.apply(pod("hung", container("main", "sleep", "3601")))
	eventually(t, converge, "a status call of the hung pod stalled", func() (bool, string) {
		stalled, _ := proxy.counts(methodContainerStatus)
		return stalled > 0, fmt.Sprintf("%d stalled", stalled)
	})

	// Healthy with the hang under way (its first relist may have waited
	// on it), then sampled until the end.
	eventually(t, converge, "the PLEG SERVING", func() (bool, string) {
		st, err := n.plegHealth()
		return err == nil && st == healthpb.HealthCheckResponse_SERVING, fmt.Sprintf("%s %v", st, err)
	})
	n.apply(pod("steady", sleeper("main")))
	n.apply(pod("crashy", container("crash", "sh", "-c", "exit 1")))
	var unhealthy []string
	eventually(t, 2*converge, "steady Running and crashy restarted twice, beside the hung pod", func() (bool, string) {
		if st, err := n.plegHealth(); err != nil || st != healthpb.HealthCheckResponse_SERVING {
			unhealthy = append(unhealthy, fmt.Sprintf("%s %v at %s", st, err, time.Now().Format("05.000")))
		}
		s, err := n.get("steady")
		if err != nil {
			return false, err.Error()
		}
		c, err := n.get("crashy")
		if err != nil {
			return false, err.Error()
		}
		return allReady(s) && cstatus(c, "crash").GetRestartCount() >= 2, summary(s) + " | " + summary(c)
	})
	if len(unhealthy) > 0 {
		t.Errorf("the PLEG was not SERVING while one pod's status calls hung: %v", unhealthy)
	}
	stalled, _ := proxy.counts(methodContainerStatus)
	summaryf(t, "hung ContainerStatus calls=%d unhealthy_samples=%d", stalled, len(unhealthy))
}
