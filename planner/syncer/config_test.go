package syncer

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/syncpod/syncpod/executor/executortest"
	"github.com/syncpod/syncpod/planner/plan"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// configPod mounts ConfigMap "cfg" and reads Secret "creds" into env.
func configPod() *syncpodv1.Pod {
	p := webPod()
	p.Spec.Volumes = []*syncpodv1.Volume{{Name: "config", Source: &syncpodv1.Volume_ConfigMap{ConfigMap: &syncpodv1.ConfigMapVolumeSource{Name: "cfg"}}}}
	c := p.Spec.Containers[0]
	c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}
	c.Env = []*syncpodv1.EnvVar{{Name: "PW", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{
		SecretKeyRef: &syncpodv1.SecretKeySelector{Name: "creds", Key: "pw"}}}}}
	return p
}

// volumeCalls returns the volume refreshes ex got, as the pod's uid and
// the value of key "k" of their first ConfigMap, and the uids of the
// pods whose volumes it removed.
func volumeCalls(ex *executortest.Executor) ([]*plannerv1.PodRef, []string) {
	r := ex.Requests()
	var ups []*plannerv1.PodRef
	for _, u := range r.VolumeUpdates {
		ups = append(ups, &plannerv1.PodRef{Uid: u.GetPod().GetUid(), Name: u.GetConfigMaps()[0].GetData()["k"]})
	}
	var removed []string
	for _, rm := range r.VolumeRemovals {
		removed = append(removed, rm.GetPodUid())
	}
	return ups, removed
}

// applyConfigObjects stores what configPod reads: ConfigMap cfg (k=v1)
// and Secret creds (pw=x).
func applyConfigObjects(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := e.store.ApplyConfigMap(ctx, &syncpodv1.ConfigMap{Name: "cfg", Data: map[string]string{"k": "v1"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.ApplySecret(ctx, &syncpodv1.Secret{Name: "creds", Data: map[string][]byte{"pw": []byte("x")}}); err != nil {
		t.Fatal(err)
	}
}

func TestChangeSetsCarryTheConfigObjectsThePodReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		applyConfigObjects(t, e)
		if _, _, err := e.store.ApplyConfigMap(ctx, &syncpodv1.ConfigMap{Name: "unrelated"}); err != nil {
			t.Fatal(err)
		}
		e.apply(t, configPod())
		settled(t, "an ApplyActions call", func() bool { a, _ := snapshot(e.exec); return len(a) >= 1 })
		a, _ := snapshot(e.exec)
		if cms := a[0].GetConfigMaps(); len(cms) != 1 || cms[0].GetName() != "cfg" {
			t.Errorf("config maps sent: %v", cms)
		}
		if secs := a[0].GetSecrets(); len(secs) != 1 || string(secs[0].GetData()["pw"]) != "x" {
			t.Errorf("secrets sent: %v", secs)
		}
	})
}

func TestAConfigMapChangeRefreshesTheVolumesOfARunningPodWithoutARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		applyConfigObjects(t, e)
		o := runningObserved(uid)
		o.Containers[0].SpecHash = plan.SpecHash(configPod().GetSpec().GetContainers()[0])
		e.pleg.set(o)
		e.apply(t, configPod())
		settled(t, "a volume refresh with v1", func() bool { u, _ := volumeCalls(e.exec); return len(u) >= 1 && u[len(u)-1].GetName() == "v1" })
		if _, _, err := e.store.ApplyConfigMap(ctx, &syncpodv1.ConfigMap{Name: "cfg", Data: map[string]string{"k": "v2"}}); err != nil {
			t.Fatal(err)
		}
		settled(t, "a volume refresh with v2", func() bool { u, _ := volumeCalls(e.exec); return len(u) >= 2 && u[len(u)-1].GetName() == "v2" })
		if a, _ := snapshot(e.exec); len(a) != 0 {
			t.Fatalf("a config change restarted something: %v", a)
		}
	})
}

func TestARemovedPodsVolumesAreRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.pleg.set(&syncpodv1.ObservedPod{Uid: uid, Name: "web", Namespace: "default"})
		pod := e.apply(t, webPod())
		settled(t, "a first sync", func() bool { return e.pleg.getCount(pod.GetUid()) >= 1 })
		if _, err := e.store.MarkDeleted(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()}, nil); err != nil {
			t.Fatal(err)
		}
		settled(t, "the pod to leave the store", func() bool {
			_, err := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
			return err != nil
		})
		if _, rm := volumeCalls(e.exec); len(rm) != 1 || rm[0] != uid {
			t.Fatalf("volume removals %v, want the pod's", rm)
		}
	})
}

// A label-only change keeps the pod's generation, yet it syncs the pod at
// once, so its downwardAPI files follow at that sync (not the next resync),
// and it restarts nothing.
func TestALabelChangeRefreshesDownwardAPIVolumesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		pod := webPod()
		pod.Labels = map[string]string{"tier": "web"}
		pod.Spec.Volumes = []*syncpodv1.Volume{{Name: "info", Source: &syncpodv1.Volume_DownwardApi{DownwardApi: &syncpodv1.DownwardAPIVolumeSource{
			Items: []*syncpodv1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}}
		o := runningObserved(uid)
		o.Containers[0].SpecHash = plan.SpecHash(pod.GetSpec().GetContainers()[0])
		e.pleg.set(o)
		e.apply(t, pod)
		labelsRefreshed := func(want string) func() bool {
			return func() bool {
				u := e.exec.Requests().VolumeUpdates
				return len(u) > 0 && u[len(u)-1].GetPod().GetLabels()["tier"] == want
			}
		}
		settled(t, "a refresh with tier=web", labelsRefreshed("web"))
		pod.Labels["tier"] = "frontend"
		stored := e.apply(t, pod)
		if stored.GetGeneration() != 1 {
			t.Fatalf("a label change bumped the generation to %d", stored.GetGeneration())
		}
		// settled waits with no time passing beyond what the goroutines
		// need: far less than a resync period.
		settled(t, "a refresh with tier=frontend", labelsRefreshed("frontend"))
		if a, _ := snapshot(e.exec); len(a) != 0 {
			t.Fatalf("a label change restarted something: %v", a)
		}
	})
}
