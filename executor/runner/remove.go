package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// RemoveResources removes exited containers and stopped sandboxes, in
// request order, containers first. NotFound counts as success; a running
// container or a ready sandbox is refused. An unreachable runtime aborts
// with runtimeclient.ErrUnavailable. With forget set (a deleted pod) and every
// removal done, the pod's log directory and back-off entries go too.
func (r *Runner) RemoveResources(ctx context.Context, containerIDs, sandboxIDs []string, forget *executorv1.ForgetPodRef) (*executorv1.RemoveResourcesResponse, error) {
	resp := &executorv1.RemoveResourcesResponse{}
	add := func(id string, sandbox bool, err error, refused string) error {
		res := &executorv1.RemoveResult{Id: id, Sandbox: sandbox, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED}
		switch {
		case errors.Is(err, runtimeclient.ErrUnavailable):
			return err
		case err != nil:
			res.Outcome, res.Message = executorv1.Outcome_OUTCOME_FAILED, err.Error()
		case refused != "":
			res.Outcome, res.Message = executorv1.Outcome_OUTCOME_FAILED, refused
		}
		resp.Results = append(resp.Results, res)
		return nil
	}
	for _, id := range containerIDs {
		st, err := r.rt.ContainerStatus(ctx, id, false)
		err = runtimeclient.IgnoreNotFound(err)
		refused := ""
		switch {
		case err != nil:
		case st.GetStatus() == nil: // gone
		case st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING:
			refused = "container is running; stop it first"
		default:
			err = runtimeclient.IgnoreNotFound(r.rt.RemoveContainer(ctx, id))
		}
		if e := add(id, false, err, refused); e != nil {
			return nil, e
		}
	}
	for _, id := range sandboxIDs {
		st, err := r.rt.PodSandboxStatus(ctx, id, false)
		err = runtimeclient.IgnoreNotFound(err)
		refused := ""
		switch {
		case err != nil:
		case st.GetStatus() == nil:
		case st.GetStatus().GetState() == runtimeapi.PodSandboxState_SANDBOX_READY:
			refused = "sandbox is ready; stop the pod first"
		default:
			err = runtimeclient.IgnoreNotFound(r.rt.RemovePodSandbox(ctx, id))
			if err == nil {
				r.removePodDirIfGone(ctx, st.GetStatus().GetMetadata().GetUid())
			}
		}
		if e := add(id, true, err, refused); e != nil {
			return nil, e
		}
	}
	if forget == nil {
		return resp, nil
	}
	for _, res := range resp.GetResults() {
		if res.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
			return resp, nil // the caller retries; the pod is not gone yet
		}
	}
	if err := r.forgetPod(forget, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// removePodDirIfGone frees the pod's user namespace range and removes its
// cgroup and its directory (hosts file, termination logs, volumes) under
// the pod's lock once the runtime lists no sandbox of the pod any more. A
// failure is logged: a later removal, the next start, or the periodic
// release of ranges (RunUserNamespaceCleanup) retries.
func (r *Runner) removePodDirIfGone(ctx context.Context, uid string) {
	if uid == "" || strings.ContainsAny(uid, "/\\") || uid == "." || uid == ".." {
		return
	}
	held, err := r.store.UserNamespaces()
	if err != nil {
		r.log.Warn("cannot read the user namespace ranges", "err", err)
	}
	if _, holds := held[uid]; !holds && r.podRoot == "" && r.cg == nil {
		return // nothing of the pod's to remove
	}
	left, err := r.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{crilabels.PodUID: uid}})
	if err != nil || len(left) > 0 {
		return
	}
	release, err := r.lockPod(ctx, uid)
	if err != nil {
		return
	}
	defer release()
	// a pod without sandboxes holds no user namespace range (the
	// sandboxes are listed again under the lock: a pass may have made one).
	if _, holds := held[uid]; holds {
		if freed, err := r.releaseUserNamespaceLocked(ctx, uid); err != nil {
			r.log.Warn("cannot release the user namespace of a pod without sandboxes", "pod_uid", uid, "err", err)
		} else if freed {
			r.log.Info("user namespace of a pod without sandboxes released", "pod_uid", uid, "host_id", held[uid])
		}
	}
	if r.podRoot == "" && r.cg == nil {
		return
	}
	// the pod cgroup goes with the pod's last sandbox.
	r.removePodCgroup(ctx, uid)
	if r.podRoot == "" {
		return
	}
	if r.volumes != nil {
		// The volume manager unmounts its tmpfs volumes before it deletes
		// its pod directory (the same <pod-dir>/<uid> in the executor).
		err = r.volumes.Remove(uid)
	}
	if err == nil {
		err = os.RemoveAll(filepath.Join(r.podRoot, uid))
	}
	if err != nil {
		r.log.Warn("cannot remove the pod directory", "pod_uid", uid, "err", err)
	}
}

// forgetPod removes a deleted pod's log directory and its crash-loop
// back-off entries, and frees its user namespace range (the kubelet
// removes the log directories of deleted pods in its container garbage
// collection; syncpod's store, which outlives restarts, must not keep
// entries nobody can reach). All are idempotent: a second call finds
// nothing to remove.
func (r *Runner) forgetPod(ref *executorv1.ForgetPodRef, resp *executorv1.RemoveResourcesResponse) error {
	pod := &syncpodv1.Pod{Uid: ref.GetUid(), Namespace: ref.GetNamespace(), Name: ref.GetName()}
	dir := PodLogDir(r.logDir, pod)
	if _, err := os.Lstat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove the log directory of pod %s: %w", ref.GetUid(), err)
		}
		resp.LogDirRemoved = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("log directory of pod %s: %w", ref.GetUid(), err)
	}
	n, err := r.store.Reset(ref.GetUid(), "")
	if err != nil {
		return fmt.Errorf("remove the back-offs of pod %s: %w", ref.GetUid(), err)
	}
	resp.BackoffsRemoved = int32(n)
	// a deleted pod's user namespace range is free for another.
	if _, err := r.store.ReleaseUserNamespace(ref.GetUid()); err != nil {
		return fmt.Errorf("release the user namespace of pod %s: %w", ref.GetUid(), err)
	}
	r.log.Info("deleted pod forgotten", "pod_uid", ref.GetUid(), "pod", ref.GetNamespace()+"/"+ref.GetName(),
		"log_dir_removed", resp.GetLogDirRemoved(), "backoffs_removed", n)
	return nil
}
