package node

import (
	"context"
	"maps"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/syncpod/syncpod/node/kubeconv"
	"github.com/syncpod/syncpod/planner/manifest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// mirrors keeps a mirror pod on the API server for each static pod (a
// planner pod of source file), as the kubelet does: named
// <name>-<node name>, annotated kubernetes.io/config.mirror with the static
// pod's uid, its status the static pod's. The API server cannot change a
// static pod: a deleted mirror pod is made again, and a mirror pod whose
// static pod is gone is deleted.
type mirrors struct {
	mu sync.Mutex
	// static is the newest record of each static pod, by planner key
	// (namespace/name); nil once the planner removed it.
	static map[string]*plannerv1.PodRecord
}

// mirrorName is the API name of the mirror pod of static pod name.
func (a *Agent) mirrorName(name string) string { return name + "-" + a.o.NodeName }

// staticKey is the planner key of the static pod a mirror pod's key
// stands for, or "" when the name is not a mirror pod's.
func (a *Agent) staticKey(ns, name string) string {
	base, ok := strings.CutSuffix(name, "-"+a.o.NodeName)
	if !ok || base == "" {
		return ""
	}
	return ns + "/" + base
}

// observeStatic records a static pod's change and schedules its mirror.
func (a *Agent) observeStatic(key string, rec *plannerv1.PodRecord, deleted bool) {
	a.mirror.mu.Lock()
	if deleted {
		a.mirror.static[key] = nil
	} else {
		a.mirror.static[key] = rec
	}
	a.mirror.mu.Unlock()
	a.mirrorQueue.Add(key)
}

// syncMirror makes the mirror pod of static pod key match it: created,
// re-created for a new incarnation, deleted when the static pod is gone;
// its status follows the static pod's.
func (a *Agent) syncMirror(ctx context.Context, key string) error {
	ns, name, err := splitKey(key)
	if err != nil {
		return nil
	}
	a.mirror.mu.Lock()
	rec, known := a.mirror.static[key]
	a.mirror.mu.Unlock()
	mname := a.mirrorName(name)
	pods := a.o.Client.CoreV1().Pods(ns)
	cur, err := a.lister.Pods(ns).Get(mname)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if apierrors.IsNotFound(err) {
		cur = nil
	}
	if cur != nil && (!known || rec == nil || cur.DeletionTimestamp != nil || cur.Annotations[corev1.MirrorPodAnnotationKey] != rec.GetPod().GetUid()) {
		// A stale mirror: of a static pod that is gone, or of an older
		// one; or deleted by a user: it goes now (grace 0), and a fresh
		// one is made while the static pod runs.
		if err := a.deleteAPIPod(ctx, cur); err != nil {
			return err
		}
		cur = nil
	}
	if rec == nil {
		if !known {
			return nil
		}
		a.mirror.mu.Lock()
		if a.mirror.static[key] == nil {
			delete(a.mirror.static, key)
		}
		a.mirror.mu.Unlock()
		return nil
	}
	if cur == nil {
		created, err := pods.Create(ctx, mirrorPod(rec.GetPod(), mname, a.o.NodeName), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return errRetry // the cache has not seen it yet
		}
		if err != nil {
			return err
		}
		a.o.Logger.Info("mirror pod created for a static pod", "pod", key, "mirror", mname)
		cur = created
	}
	if rec.GetStatus() != nil {
		a.status.Set(ns+"/"+mname, statusSource{uid: cur.UID, planner: rec.GetStatus()})
	}
	return nil
}

// mirrorPod is the API object standing for static pod p.
func mirrorPod(p *syncpodv1.Pod, name, nodeName string) *corev1.Pod {
	ann := maps.Clone(p.GetAnnotations())
	if ann == nil {
		ann = map[string]string{}
	}
	ann[corev1.MirrorPodAnnotationKey] = p.GetUid()
	ann[manifest.SourceAnnotation] = manifest.SourceFile
	s := p.GetSpec()
	kp := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.GetNamespace(), Labels: maps.Clone(p.GetLabels()), Annotations: ann},
		Spec: corev1.PodSpec{
			NodeName:                      nodeName,
			HostNetwork:                   s.GetHostNetwork(),
			Hostname:                      s.GetHostname(),
			TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds,
			AutomountServiceAccountToken:  ptr.To(false),
			RestartPolicy: map[syncpodv1.RestartPolicy]corev1.RestartPolicy{
				syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE: corev1.RestartPolicyOnFailure,
				syncpodv1.RestartPolicy_RESTART_POLICY_NEVER:      corev1.RestartPolicyNever,
			}[s.GetRestartPolicy()],
			// The node runs it whatever taints say, as the kubelet does
			// for static pods.
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
	for _, c := range s.GetInitContainers() {
		kp.Spec.InitContainers = append(kp.Spec.InitContainers, mirrorContainer(c))
	}
	for _, c := range s.GetContainers() {
		kp.Spec.Containers = append(kp.Spec.Containers, mirrorContainer(c))
	}
	return kp
}

// mirrorContainer carries what a reader of the mirror pod needs: what runs
// and with which resources (probes, ports and the rest stay on the node).
func mirrorContainer(c *syncpodv1.Container) corev1.Container {
	kc := corev1.Container{
		Name: c.GetName(), Image: c.GetImage(), Command: c.GetCommand(), Args: c.GetArgs(), WorkingDir: c.GetWorkingDir(),
		ImagePullPolicy: kubeconv.PullPolicyToAPI(c.GetImagePullPolicy()),
	}
	for _, e := range c.GetEnv() {
		kc.Env = append(kc.Env, corev1.EnvVar{Name: e.GetName(), Value: e.GetValue()})
	}
	rl := func(l *syncpodv1.ResourceList) corev1.ResourceList {
		out := corev1.ResourceList{}
		if q, err := resource.ParseQuantity(l.GetCpu()); err == nil && l.GetCpu() != "" {
			out[corev1.ResourceCPU] = q
		}
		if q, err := resource.ParseQuantity(l.GetMemory()); err == nil && l.GetMemory() != "" {
			out[corev1.ResourceMemory] = q
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	kc.Resources = corev1.ResourceRequirements{Requests: rl(c.GetResources().GetRequests()), Limits: rl(c.GetResources().GetLimits())}
	return kc
}
