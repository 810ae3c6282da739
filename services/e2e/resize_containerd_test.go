package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/validate"
	"github.com/syncpod/syncpod/proto/linuxres"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// cgroupScript prints a container's CFS quota, CPU weight (v2) or shares
// (v1) and memory limit, read from its own cgroup.
const cgroupScript = `if [ -f /sys/fs/cgroup/cpu.max ]; then
  echo "v2 $(cut -d' ' -f1 /sys/fs/cgroup/cpu.max) $(cat /sys/fs/cgroup/cpu.weight) $(cat /sys/fs/cgroup/memory.max)"
else
  echo "v1 $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.shares) $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"
fi`

// cgroupOf reads container id's cgroup values.
func (n *node) cgroupOf(id string) string {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, errOut, err := n.cri.ExecSync(ctx, id, []string{"sh", "-c", cgroupScript}, 10*time.Second)
	if err != nil {
		n.t.Fatalf("reading the cgroup of %s: %v (%s)", id, err, errOut)
	}
	return strings.TrimSpace(string(out))
}

// wantCgroup is what the kubelet's conversion of r sets in a container's
// cgroup, in cgroupScript's form (v2: the runtime's weight from the
// shares; no limit is "max", v1: -1 and the page-rounded huge value are
// not compared).
func wantCgroup(t *testing.T, got string, r *syncpodv1.ResourceRequirements) string {
	t.Helper()
	v, err := linuxres.Of(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(got, "v2") {
		weight := 1 + ((v.CPUShares-2)*9999)/262142 // the OCI runtime's shares to weight
		quota, mem := "max", "max"
		if v.CPUQuota > 0 {
			quota = fmt.Sprint(v.CPUQuota)
		}
		if v.MemoryLimitBytes > 0 {
			mem = fmt.Sprint(v.MemoryLimitBytes)
		}
		return fmt.Sprintf("v2 %s %d %s", quota, weight, mem)
	}
	return fmt.Sprintf("v1 %d %d %d", v.CPUQuota, v.CPUShares, v.MemoryLimitBytes)
}

func resources(reqCPU, reqMem, limCPU, limMem string) *syncpodv1.ResourceRequirements {
	return &syncpodv1.ResourceRequirements{
		Requests: &syncpodv1.ResourceList{Cpu: reqCPU, Memory: reqMem},
		Limits:   &syncpodv1.ResourceList{Cpu: limCPU, Memory: limMem},
	}
}

func condition(r *plannerv1.PodRecord, typ string) *syncpodv1.PodCondition {
	for _, c := range r.GetStatus().GetConditions() {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

// resized: the container's status reports want, nothing is in progress
// or pending, and it still runs.
func resized(name string, want *syncpodv1.ResourceRequirements) func(*plannerv1.PodRecord) bool {
	return func(r *plannerv1.PodRecord) bool {
		cs := cstatus(r, name)
		return cs.GetState().GetRunning() != nil && proto.Equal(cs.GetResources(), want) &&
			condition(r, "PodResizeInProgress") == nil && condition(r, "PodResizePending") == nil
	}
}

// TestResizeOnContainerd: in-place resize on a real containerd (R-25.1
// to ): CPU and memory grow, then shrink, in the running container
// (same id, no restart, its cgroup read back from inside it); a resize
// the node can never hold is PodResizePending/Infeasible and changes
// nothing; a resource whose resize policy is RestartContainer restarts
// that container alone, for a memory request too; a resize admitted while the planner was down is
// carried out by the planner that starts next.
func TestResizeOnContainerd(t *testing.T) {
	endpoint := nodeOnContainerd(t)
	busybox := containerdtest.BusyboxImage()
	n := startNode(t, nodeOptions{criEndpoint: endpoint})

	ctr := func(name string, r *syncpodv1.ResourceRequirements) *syncpodv1.Container {
		return &syncpodv1.Container{Name: name, Image: busybox, Resources: r,
			Command:         []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
			ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}
	}
	app := ctr("app", resources("100m", "32Mi", "200m", "64Mi"))
	db := ctr("db", resources("50m", "16Mi", "100m", "32Mi"))
	db.ResizePolicy = []*syncpodv1.ContainerResizePolicy{{ResourceName: "memory",
		RestartPolicy: syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER}}
	p := pod("resize", app, db)
	p.Spec.HostNetwork = true
	n.apply(p)
	rec := n.waitRecord(p.Name, time.Minute, "app and db running", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "app").GetState().GetRunning() != nil && cstatus(r, "db").GetState().GetRunning() != nil
	})
	appID, dbID := cstatus(rec, "app").GetContainerId(), cstatus(rec, "db").GetContainerId()
	if got, want := n.cgroupOf(appID), wantCgroup(t, n.cgroupOf(appID), app.Resources); got != want {
		t.Errorf("app's cgroup at start: %s, want %s", got, want)
	}

	steps := []struct {
		what string
		to   *syncpodv1.ResourceRequirements
	}{
		{"grown", resources("250m", "64Mi", "500m", "128Mi")},
		{"shrunk", resources("50m", "24Mi", "100m", "48Mi")},
	}
	for _, st := range steps {
		app.Resources = st.to
		n.apply(p)
		rec = n.waitRecord(p.Name, time.Minute, "app "+st.what+" in place", resized("app", st.to))
		if cs := cstatus(rec, "app"); cs.GetContainerId() != appID || cs.GetRestartCount() != 0 {
			t.Fatalf("app %s: container %s restarts %d, want %s not restarted", st.what, cs.GetContainerId(), cs.GetRestartCount(), appID)
		}
		if got := cstatus(rec, "app").GetAllocatedResources(); !proto.Equal(got, st.to.GetRequests()) {
			t.Errorf("app %s: allocated %v, want %v", st.what, got, st.to.GetRequests())
		}
		got := n.cgroupOf(appID)
		if want := wantCgroup(t, got, st.to); got != want {
			t.Errorf("app's cgroup %s: %s, want %s", st.what, got, want)
		}
		t.Logf("app %s in place: cgroup (quota, shares or weight, memory limit) %s", st.what, got)
	}
	last := app.Resources

	// More memory than any node has: infeasible, nothing changes.
	app.Resources = resources("50m", "1Pi", "100m", "1Pi")
	n.apply(p)
	rec = n.waitRecord(p.Name, time.Minute, "PodResizePending Infeasible", func(r *plannerv1.PodRecord) bool {
		c := condition(r, "PodResizePending")
		return c.GetReason() == "Infeasible" && strings.Contains(c.GetMessage(), "memory")
	})
	if cs := cstatus(rec, "app"); cs.GetContainerId() != appID || !proto.Equal(cs.GetResources(), last) {
		t.Errorf("an infeasible resize changed app: %s %v", cs.GetContainerId(), cs.GetResources())
	}
	app.Resources = last
	n.apply(p)
	n.waitRecord(p.Name, time.Minute, "the infeasible resize withdrawn", resized("app", last))

	// db's memory resizes by restarting db alone.
	db.Resources = resources("50m", "24Mi", "100m", "48Mi")
	n.apply(p)
	rec = n.waitRecord(p.Name, time.Minute, "db restarted with its new memory", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "db").GetRestartCount() == 1 && resized("db", db.Resources)(r)
	})
	if id := cstatus(rec, "db").GetContainerId(); id == dbID {
		t.Error("db was not restarted for its memory resize")
	} else if got, want := n.cgroupOf(id), wantCgroup(t, n.cgroupOf(id), db.Resources); got != want {
		t.Errorf("db's cgroup after its restart: %s, want %s", got, want)
	}
	if cs := cstatus(rec, "app"); cs.GetContainerId() != appID || cs.GetRestartCount() != 0 {
		t.Errorf("db's resize restarted app (%s, %d restarts)", cs.GetContainerId(), cs.GetRestartCount())
	}
	// Its memory request alone, which sets nothing in the runtime, also
	// restarts it.
	db.Resources = resources("50m", "20Mi", "100m", "48Mi")
	n.apply(p)
	n.waitRecord(p.Name, time.Minute, "db restarted for its memory request", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "db").GetRestartCount() == 2 && resized("db", db.Resources)(r)
	})

	// Admitted while no planner runs (as a planner killed between the
	// admission and the update leaves it): the next planner carries it out.
	app.Resources = resources("100m", "32Mi", "300m", "64Mi")
	var dataDir string
	for _, a := range n.plannerArgs {
		if d, ok := strings.CutPrefix(a, "--data-dir="); ok {
			dataDir = d
		}
	}
	n.killPlannerWhile(func() {
		s, err := store.Open(store.Options{Path: filepath.Join(dataDir, "planner.db"), Validate: validate.Pod})
		if err != nil {
			t.Fatalf("opening the planner's store: %v", err)
		}
		defer s.Close()
		if _, _, err := s.Apply(context.Background(), p); err != nil {
			t.Fatalf("admitting the resize: %v", err)
		}
	})
	rec = n.waitRecord(p.Name, time.Minute, "the resize admitted before the restart carried out", resized("app", app.Resources))
	if cs := cstatus(rec, "app"); cs.GetContainerId() != appID || cs.GetRestartCount() != 0 {
		t.Errorf("app after the planner's restart: %s, %d restarts; want %s not restarted", cs.GetContainerId(), cs.GetRestartCount(), appID)
	}
	if got, want := n.cgroupOf(appID), wantCgroup(t, n.cgroupOf(appID), app.Resources); got != want {
		t.Errorf("app's cgroup after the planner's restart: %s, want %s", got, want)
	}
}
