package manifest

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// dirWatch turns the kernel's notifications for one directory into a
// coalesced wake-up: any number of relevant events between two reads of
// wake() is one value. It re-arms itself when the directory is removed and
// created again, which the caller asks for with rearm on every periodic
// scan.
type dirWatch struct {
	dir    string
	logger *slog.Logger
	w      *fsnotify.Watcher
	wake   chan struct{}

	mu      sync.Mutex
	watched bool // dir is currently added to w
}

// newDirWatch starts watching dir. An error means the platform has no
// notifications to give (inotify instances exhausted, say): the caller
// falls back to polling. A directory that does not exist yet is not an
// error; rearm adds it once it appears.
func newDirWatch(dir string, logger *slog.Logger) (*dirWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	d := &dirWatch{dir: filepath.Clean(dir), logger: logger, w: w, wake: make(chan struct{}, 1)}
	d.rearm()
	return d, nil
}

// rearm adds the directory to the watcher when it is not watched (it did
// not exist, or was removed). It reports whether the directory is watched.
func (d *dirWatch) rearm() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.watched {
		return true
	}
	if err := d.w.Add(d.dir); err != nil {
		d.logger.Debug("manifest dir not watched; polling only", "dir", d.dir, "err", err)
		return false
	}
	d.watched = true
	d.logger.Debug("watching manifest dir", "dir", d.dir)
	return true
}

// run forwards events until ctx ends or the watcher is closed.
func (d *dirWatch) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-d.w.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) == d.dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				// The directory itself went away: its watch is gone
				// with it. The next rearm adds the new one.
				d.mu.Lock()
				d.watched = false
				d.mu.Unlock()
				_ = d.w.Remove(d.dir)
				d.notify()
				continue
			}
			if relevant(ev) {
				d.notify()
			}
		case err, ok := <-d.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: only a full scan can tell what
				// changed.
				d.notify()
				continue
			}
			d.logger.Warn("manifest dir watch error", "dir", d.dir, "err", err)
		}
	}
}

// notify records a wake-up without blocking; one pending is enough.
func (d *dirWatch) notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dirWatch) close() { _ = d.w.Close() }

// relevant reports whether an event can change the desired pods: anything
// happening to a visible manifest file. Hidden files are what editors and
// careful writers use before renaming into place; the rename shows up as a
// Create of the visible name. Chmod alone changes no content.
func relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	name := filepath.Base(ev.Name)
	if strings.HasPrefix(name, ".") {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}
