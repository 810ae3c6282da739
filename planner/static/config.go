package static

import (
	"context"
	"errors"

	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/planner/store"
)

// ApplyConfig carries the ConfigMaps and Secrets of a manifest diff into
// the store (Apply does so before the pods, so a new pod finds them). It
// returns the changes to try again on the next scan. Secret values are
// never logged.
func (r *Reconciler) ApplyConfig(ctx context.Context, d manifest.Diff) (retry []manifest.ConfigChange) {
	st := r.opts.Store
	for _, c := range d.ConfigChanges {
		log := r.log.With("file", c.File, "object", c.Key(), "change", c.Type.String())
		var err error
		switch c.Type {
		case manifest.Added, manifest.Updated:
			if c.ConfigMap != nil {
				_, _, err = st.ApplyConfigMap(ctx, c.ConfigMap)
			} else {
				_, _, err = st.ApplySecret(ctx, c.Secret)
			}
		case manifest.Removed:
			if c.ConfigMap != nil {
				err = st.DeleteConfigMap(ctx, c.ConfigMap.GetNamespace(), c.ConfigMap.GetName())
			} else {
				err = st.DeleteSecret(ctx, c.Secret.GetNamespace(), c.Secret.GetName())
			}
			if errors.Is(err, store.ErrConfigNotFound) {
				err = nil
			}
		}
		if err != nil {
			log.Error("cannot apply static config object", "err", err)
			if !errors.Is(err, store.ErrInvalid) && !errors.Is(err, store.ErrImmutable) {
				retry = append(retry, c)
			}
			continue
		}
		log.Info("static config object applied")
	}
	return retry
}
