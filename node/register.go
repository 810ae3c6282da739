package node

import (
	"context"
	"maps"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/syncpod/syncpod/planner/nodeshutdown"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// leaseNamespace holds the nodes' heartbeat leases.
const leaseNamespace = corev1.NamespaceNodeLease

// plannerReady asks the planner's health service (without one the
// planner counts as serving), then whether the node is shutting down.
func (a *Agent) plannerReady(ctx context.Context) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if a.o.PlannerHealth != nil {
		resp, err := a.o.PlannerHealth.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return false, "syncpod planner does not answer: " + err.Error()
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			return false, "syncpod planner is " + resp.GetStatus().String()
		}
	}
	if a.shuttingDown(ctx) {
		// the kubelet's Ready condition while its shutdown
		// manager says the node is shutting down.
		return false, nodeshutdown.NodeNotReadyMessage
	}
	return true, ""
}

// shuttingDown asks the planner whether the node is shutting down (a
// graceful shutdown started and not cancelled). A planner that cannot
// say is taken as not shutting down.
func (a *Agent) shuttingDown(ctx context.Context) bool {
	if a.o.Planner == nil {
		return false
	}
	resp, err := a.o.Planner.GetNodeShutdown(ctx, &plannerv1.GetNodeShutdownRequest{})
	if err != nil {
		return false
	}
	st := resp.GetShutdown()
	return st.GetPhase() != plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_UNSPECIFIED && !st.GetCancelled()
}

// register creates the Node, or adopts an existing one (its labels gain
// ours), and posts its first status. It retries until it succeeds or ctx
// ends.
func (a *Agent) register(ctx context.Context) (*corev1.Node, error) {
	delay := 200 * time.Millisecond
	for {
		n, err := a.tryRegister(ctx)
		if err == nil {
			return n, nil
		}
		a.o.Logger.Warn("cannot register the node; retrying", "node", a.o.NodeName, "err", err, "in", delay)
		if !sleep(ctx, delay) {
			return nil, ctx.Err()
		}
		delay = min(2*delay, 7*time.Second)
	}
}

func (a *Agent) tryRegister(ctx context.Context) (*corev1.Node, error) {
	nodes := a.o.Client.CoreV1().Nodes()
	labels := NodeLabels(a.o.NodeName, a.o.Labels)
	n, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.o.NodeName, Labels: labels}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		if n, err = nodes.Get(ctx, a.o.NodeName, metav1.GetOptions{}); err != nil {
			return nil, err
		}
		want := maps.Clone(n.Labels)
		if want == nil {
			want = map[string]string{}
		}
		maps.Copy(want, labels)
		if !maps.Equal(want, n.Labels) || n.Spec.Unschedulable {
			n.Labels = want
			if n, err = nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				return nil, err
			}
		}
	} else if err != nil {
		return nil, err
	}
	ready, why := a.plannerReady(ctx)
	n.Status = NodeStatus(a.o.Host, ready, why, a.currentPressure(ctx), &n.Status, a.o.Now())
	return nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
}

// runNodeStatus posts the node status every StatusUpdateFrequency, and at
// once when the planner's readiness or a pressure condition changes
// (checked every few seconds).
func (a *Agent) runNodeStatus(ctx context.Context, node *corev1.Node) error {
	check := min(5*time.Second, a.o.StatusUpdateFrequency)
	wasReady, _ := a.plannerReady(ctx)
	was := a.currentPressure(ctx)
	last := a.o.Now()
	for sleep(ctx, check) {
		ready, why := a.plannerReady(ctx)
		pr := a.currentPressure(ctx)
		changed := ready != wasReady || pr.Memory != was.Memory || pr.Disk != was.Disk || pr.PID != was.PID
		if !changed && a.o.Now().Sub(last) < a.o.StatusUpdateFrequency {
			continue
		}
		n, err := a.postNodeStatus(ctx, node, ready, why, pr)
		if err != nil {
			a.m.nodeStatus.WithLabelValues("error").Inc()
			a.o.Logger.Warn("cannot update the node status", "err", err)
			continue
		}
		a.m.nodeStatus.WithLabelValues("ok").Inc()
		if ready != wasReady {
			a.o.Logger.Info("node readiness changed", "ready", ready, "why", why)
		}
		if pr.Memory != was.Memory || pr.Disk != was.Disk || pr.PID != was.PID {
			a.o.Logger.Info("node pressure changed", "memory", pr.Memory, "disk", pr.Disk, "pid", pr.PID, "signals", pr.signals())
		}
		node, wasReady, was, last = n, ready, pr, a.o.Now()
	}
	return nil
}

func (a *Agent) postNodeStatus(ctx context.Context, node *corev1.Node, ready bool, why string, pr Pressure) (*corev1.Node, error) {
	nodes := a.o.Client.CoreV1().Nodes()
	n := node.DeepCopy()
	n.Status = NodeStatus(a.o.Host, ready, why, pr, &node.Status, a.o.Now())
	got, err := nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
	// A stale copy is refused: Conflict, or Forbidden when it would undo
	// what others changed since (NodeRestriction forbids a node to change
	// its taints, which the controller-manager adds). Read the Node again
	// and write its status once more.
	if apierrors.IsConflict(err) || apierrors.IsForbidden(err) {
		if n, err = nodes.Get(ctx, a.o.NodeName, metav1.GetOptions{}); err != nil {
			return nil, err
		}
		n.Status = NodeStatus(a.o.Host, ready, why, pr, &n.Status, a.o.Now())
		got, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
	}
	return got, err
}

// leaseJitter is the share of the renew interval added at random to each
// wait, the kubelet's lease controller's: renewals of nodes started
// together spread out instead of reaching the API server at once.
const leaseJitter = 0.04

// runLease renews the node's Lease in kube-node-lease LeaseRenewInterval
// (plus up to leaseJitter of it) after the previous renewal ended,
// creating it, owned by the Node, when missing; a failed renewal is
// retried after a short back-off.
func (a *Agent) runLease(ctx context.Context, node *corev1.Node) error {
	var lease *coordinationv1.Lease
	for {
		l, err := a.renewLease(ctx, node, lease)
		if err != nil {
			a.m.leaseRenewals.WithLabelValues("error").Inc()
			a.o.Logger.Warn("cannot renew the node lease", "err", err)
			lease = nil
		} else {
			a.m.leaseRenewals.WithLabelValues("ok").Inc()
			lease = l
		}
		if !sleep(ctx, leaseWait(a.o.LeaseRenewInterval, err != nil)) {
			return nil
		}
	}
}

// leaseWait is the wait before the next renewal: the interval with the
// kubelet's jitter, or after a failure at most a second.
func leaseWait(interval time.Duration, failed bool) time.Duration {
	if failed {
		return min(interval, time.Second)
	}
	return wait.Jitter(interval, leaseJitter)
}

func (a *Agent) renewLease(ctx context.Context, node *corev1.Node, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	leases := a.o.Client.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(a.o.Now())
	if lease == nil {
		l, err := leases.Get(ctx, a.o.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{
					Name: a.o.NodeName, Namespace: leaseNamespace,
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
					}},
				},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity:       ptr.To(a.o.NodeName),
					LeaseDurationSeconds: ptr.To(int32(a.o.LeaseDuration / time.Second)),
					RenewTime:            &now,
				},
			}, metav1.CreateOptions{})
		}
		if err != nil {
			return nil, err
		}
		lease = l
	}
	l := lease.DeepCopy()
	l.Spec.HolderIdentity = ptr.To(a.o.NodeName)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(a.o.LeaseDuration / time.Second))
	l.Spec.RenewTime = &now
	return leases.Update(ctx, l, metav1.UpdateOptions{})
}
