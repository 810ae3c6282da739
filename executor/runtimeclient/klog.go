package runtimeclient

import (
	"context"
	"errors"
	"log/slog"
)

// QuietNotFound wraps h, the handler the kubelet's CRI client logs to
// (through klog). That client logs every failed call at ERROR, including
// the status or removal of a container or sandbox that is already gone,
// which the executor counts as success (NotFound is ignored where the
// kubelet ignores it): an ERROR line for a success. Such records go on at
// DEBUG; every other record is unchanged.
func QuietNotFound(h slog.Handler) slog.Handler { return quietNotFound{h} }

type quietNotFound struct{ h slog.Handler }

func (q quietNotFound) Enabled(ctx context.Context, l slog.Level) bool { return q.h.Enabled(ctx, l) }

func (q quietNotFound) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && notFoundRecord(r) {
		if !q.h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r = r.Clone()
		r.Level = slog.LevelDebug
	}
	return q.h.Handle(ctx, r)
}

func (q quietNotFound) WithAttrs(as []slog.Attr) slog.Handler {
	return quietNotFound{q.h.WithAttrs(as)}
}

func (q quietNotFound) WithGroup(name string) slog.Handler { return quietNotFound{q.h.WithGroup(name)} }

// notFoundRecord reports whether r carries an error of class ErrNotFound.
func notFoundRecord(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(Classify(err), ErrNotFound) {
			found = true
			return false
		}
		return true
	})
	return found
}
