package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/planner/store"
)

// applyManifestConfigs carries the ConfigMaps and Secrets of a manifest
// diff into the store, before the pods (so a new pod finds them). It
// returns the changes to try again on the next scan. Secret values are
// never logged.
func applyManifestConfigs(ctx context.Context, logger *slog.Logger, st *store.Store, d manifest.Diff) (retry []manifest.ConfigChange) {
	for _, c := range d.ConfigChanges {
		log := logger.With("file", c.File, "object", c.Key(), "change", c.Type.String())
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
