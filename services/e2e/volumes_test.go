package e2e

import (
	"strings"
	"testing"
	"time"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Missing config on crisim: a pod whose ConfigMap and Secret do not exist
// yet waits with CreateContainerConfigError and says why in its events
// (FailedMount for the volume, as the kubelet); once they are applied the
// container starts on its own and reads both, and the downward API env.
func TestMissingConfigWaitsThenStartsOnCrisim(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	c := container("app", "sh", "-c", `echo "conf=$(cat /etc/app/app.conf) pw=$PW pod=$POD ns=$NS"; trap 'exit 0' TERM; while true; do sleep 1; done`)
	c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}
	c.Env = []*syncpodv1.EnvVar{
		{Name: "PW", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{SecretKeyRef: &syncpodv1.SecretKeySelector{Name: "later-secret", Key: "pw"}}}},
		{Name: "POD", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FieldRef{FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		{Name: "NS", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FieldRef{FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
	}
	p := pod("waits", c)
	p.Spec.Volumes = []*syncpodv1.Volume{{Name: "config", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "later"}}}}
	n.apply(p)
	r := n.waitRecord("waits", time.Minute, "waiting with CreateContainerConfigError and a FailedMount event", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "app").GetState().GetWaiting().GetReason() == "CreateContainerConfigError" && findEvent(r, "FailedMount", "app") != nil
	})
	if msg := findEvent(r, "FailedMount", "app").GetMessage(); !strings.Contains(msg, `MountVolume.SetUp failed for volume "config" : configmap "later" not found`) {
		t.Errorf("FailedMount message %q", msg)
	}
	if msg := cstatus(r, "app").GetState().GetWaiting().GetMessage(); !strings.Contains(msg, `configmap "later" not found`) {
		t.Errorf("waiting message %q", msg)
	}

	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: later}\ndata: {app.conf: ready}\n"
	if code, o, e := n.runCtl(cm, "apply", "-f", "-"); code != 0 {
		t.Fatalf("apply configmap: %d %s %s", code, o, e)
	}
	// The ConfigMap alone is not enough: the Secret is still missing.
	n.waitRecord("waits", time.Minute, "waiting for the Secret now", func(r *plannerv1.PodRecord) bool {
		return strings.Contains(cstatus(r, "app").GetState().GetWaiting().GetMessage(), `secret "later-secret" not found`)
	})
	sec := "apiVersion: v1\nkind: Secret\nmetadata: {name: later-secret}\nstringData: {pw: opensesame}\n"
	if code, o, e := n.runCtl(sec, "apply", "-f", "-"); code != 0 {
		t.Fatalf("apply secret: %d %s %s", code, o, e)
	}
	n.waitRunning("waits", time.Minute)
	eventually(t, time.Minute, "the container to read its config, Secret and pod fields", func() (bool, string) {
		_, out, _ := n.ctl("logs", "waits", "-c", "app")
		return strings.Contains(out, "conf=ready pw=opensesame pod=waits ns=default"), out
	})
}

// The kubelet's eviction manager for local storage, on crisim: a container
// writing past its disk emptyDir's sizeLimit gets the pod evicted (phase
// Failed, reason Evicted, the message naming the volume, a Warning event)
// and stopped with the eviction manager's grace override, not the
// pod's 10 minutes: the filler ignores SIGTERM, so only the override's
// SIGKILL after the 2 s floor stops it within the wait.
func TestEmptyDirOverItsSizeLimitEvictsThePodOnCrisim(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	c := container("filler", "sh", "-c", "trap '' TERM; head -c 3000000 /dev/zero > /cache/fill; while true; do sleep 1; done")
	c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
	p := pod("evictme", c)
	grace := int64(600)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Volumes = []*syncpodv1.Volume{{Name: "cache", Source: &syncpodv1.Volume_EmptyDir{EmptyDir: &syncpodv1.EmptyDirVolumeSource{SizeLimit: "1Mi"}}}}
	stored := n.apply(p)
	rec := n.waitRecord("evictme", converge, "Failed with reason Evicted", func(r *plannerv1.PodRecord) bool {
		return r.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_FAILED && r.GetStatus().GetReason() == "Evicted"
	})
	want := `Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `
	if got := rec.GetStatus().GetMessage(); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if ev := findEvent(rec, "Evicted", ""); ev == nil || ev.GetType() != syncpodv1.EventType_EVENT_TYPE_WARNING {
		t.Errorf("Evicted event %v: %s", ev, summary(rec))
	}
	eventually(t, converge, "the filler stopped", func() (bool, string) {
		_, cs := n.runtimeOf(stored.GetUid())
		for _, c := range cs {
			if c.GetState().String() == "CONTAINER_RUNNING" {
				return false, c.GetState().String()
			}
		}
		return true, ""
	})
}
