package static

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/syncpod/syncpod/planner/events"
	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/planner/store"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ReasonFailedStaticManifest is the reason of the event a broken manifest
// leaves on the pods it keeps.
const ReasonFailedStaticManifest = "FailedStaticManifest"

// Options configure a Reconciler.
type Options struct {
	// Source reads the manifest directory. Required.
	Source *manifest.Source
	// Store holds the desired pods. Required.
	Store *store.Store
	// Logger; default discard.
	Logger *slog.Logger
	// Now stamps events; default time.Now.
	Now func() time.Time
	// Admitting reports whether new pods are admitted (the node is not
	// shutting down, R-24.4); nil: always. A new static pod waits for it,
	// retried at every scan.
	Admitting func() bool
}

// Reconciler carries manifest changes into the store. Create with New.
type Reconciler struct {
	opts Options
	log  *slog.Logger
}

// New returns a reconciler.
func New(opts Options) (*Reconciler, error) {
	if opts.Source == nil || opts.Store == nil {
		return nil, errors.New("static: Source and Store are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Reconciler{opts: opts, log: opts.Logger}, nil
}

// Run reconciles until ctx ends: one scan, the deletion of static pods
// whose manifest vanished, then every change the source finds.
func (r *Reconciler) Run(ctx context.Context) error {
	if d, err := r.opts.Source.Scan(); err == nil {
		r.opts.Source.Retry(r.Apply(ctx, d))
		r.ForgetVanished(ctx)
	}
	err := r.opts.Source.Run(ctx, r.Apply)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// ForgetVanished deletes the static pods (annotated by the manifest
// reader) that the source no longer defines: their manifest was removed
// while the planner was not running, so no scan saw the removal.
func (r *Reconciler) ForgetVanished(ctx context.Context) {
	recs, err := r.opts.Store.List(ctx, store.Filter{})
	if err != nil {
		r.log.Warn("cannot list pods to reconcile static manifests", "err", err)
		return
	}
	for _, rec := range recs {
		p := rec.GetPod()
		if p.GetAnnotations()[manifest.SourceAnnotation] != manifest.SourceFile || p.GetDeletionTime() != nil || r.opts.Source.Owns(p.GetNamespace(), p.GetName()) {
			continue
		}
		ref := &plannerv1.PodRef{Namespace: p.GetNamespace(), Name: p.GetName(), Uid: p.GetUid()}
		if _, err := r.opts.Store.MarkDeleted(ctx, ref, nil); err != nil && !errors.Is(err, store.ErrNotFound) {
			r.log.Warn("cannot delete a static pod whose manifest is gone", "pod", p.GetNamespace()+"/"+p.GetName(), "err", err)
			continue
		}
		r.log.Info("static pod deleted: its manifest is gone", "pod", p.GetNamespace()+"/"+p.GetName())
	}
}

// Apply carries a manifest diff into the store, its ConfigMaps and
// Secrets first (ApplyConfig; the source retries those that failed on its
// next scan), and returns the pod changes to try again on the next scan.
func (r *Reconciler) Apply(ctx context.Context, d manifest.Diff) (retry []manifest.Change) {
	r.opts.Source.RetryConfig(r.ApplyConfig(ctx, d))
	for _, fe := range d.Errors {
		r.log.Warn("static manifest refused; its pods are left as they were", "file", fe.File, "err", fe.Err)
		for _, p := range fe.Kept {
			rec, err := r.opts.Store.Get(ctx, &plannerv1.PodRef{Namespace: p.GetNamespace(), Name: p.GetName()})
			if err != nil {
				continue
			}
			ev := events.New(rec.GetPod(), syncpodv1.EventType_EVENT_TYPE_WARNING, ReasonFailedStaticManifest, "",
				fmt.Sprintf("static manifest %s is broken; the last good version keeps running: %v", fe.File, fe.Err), r.opts.Now())
			if err := r.opts.Store.AppendEvents(ctx, rec.GetPod().GetUid(), []*syncpodv1.Event{ev}); err != nil {
				r.log.Warn("cannot record the broken-manifest event", "file", fe.File, "err", err)
			}
		}
	}
	for _, c := range d.Changes {
		log := r.log.With("file", c.File, "pod", c.Pod.GetNamespace()+"/"+c.Pod.GetName(), "change", c.Type.String())
		for _, w := range c.Warnings {
			log.Warn("static manifest field ignored", "field", w.Path, "reason", w.Message)
		}
		switch c.Type {
		case manifest.Added, manifest.Updated:
			if !r.admits(ctx, c.Pod) {
				log.Info("static pod not admitted: the node is shutting down; it is applied once the shutdown is cancelled")
				retry = append(retry, c)
				continue
			}
			if _, res, err := r.opts.Store.Apply(ctx, c.Pod); err != nil {
				if errors.Is(err, store.ErrTerminating) {
					log.Info("static pod still terminating; it is applied again once it is gone")
				} else {
					log.Error("cannot apply static pod", "err", err)
				}
				if !errors.Is(err, store.ErrInvalid) {
					retry = append(retry, c)
				}
			} else {
				log.Info("static pod applied", "result", res.String())
			}
		case manifest.Removed:
			ref := &plannerv1.PodRef{Namespace: c.Pod.GetNamespace(), Name: c.Pod.GetName()}
			if _, err := r.opts.Store.MarkDeleted(ctx, ref, nil); err != nil && !errors.Is(err, store.ErrNotFound) {
				log.Error("cannot delete static pod", "err", err)
				retry = append(retry, c)
			} else {
				log.Info("static pod deleted")
			}
		}
	}
	return retry
}

// admits reports whether p may be applied: a pod already stored always
// may (an update), a new one only while the node admits pods.
func (r *Reconciler) admits(ctx context.Context, p *syncpodv1.Pod) bool {
	if r.opts.Admitting == nil || r.opts.Admitting() {
		return true
	}
	_, err := r.opts.Store.Get(ctx, &plannerv1.PodRef{Namespace: p.GetNamespace(), Name: p.GetName()})
	return !errors.Is(err, store.ErrNotFound)
}
