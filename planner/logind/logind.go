package logind

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// Bus is logind on the system bus, as Run uses it.
type Bus interface {
	// InhibitDelayMax is logind's InhibitDelayMaxUSec: the longest a
	// delay lock holds a shutdown back.
	InhibitDelayMax() (time.Duration, error)
	// Inhibit takes an inhibitor lock (logind's Inhibit); closing the
	// returned file releases it.
	Inhibit(what, who, why, mode string) (io.Closer, error)
	// PrepareForShutdown subscribes to logind's PrepareForShutdown
	// signal: true when a shutdown starts, false when it is cancelled.
	// The channel closes when the connection ends.
	PrepareForShutdown() (<-chan bool, error)
	// Close ends the connection.
	Close() error
}

// Options configure Run.
type Options struct {
	// Connect connects to the system bus; ConnectSystemBus in main.
	Connect func() (Bus, error)
	// Budget is the whole shutdown's time (nodeshutdown.Total): Run warns
	// when logind's InhibitDelayMaxSec is shorter.
	Budget time.Duration
	// Shutdown runs the node's shutdown; Run releases its lock after it.
	Shutdown func(ctx context.Context) error
	// Cancel cancels it (admission reopens).
	Cancel func(ctx context.Context) error
	// Logger; default discard.
	Logger *slog.Logger
}

// The inhibitor lock, as logind lists it (systemd-inhibit --list).
const (
	inhibitWhat = "shutdown"
	inhibitWho  = "syncpod"
	inhibitWhy  = "syncpod ends the node's pods by priority before the node shuts down"
	inhibitMode = "delay"
)

// Run holds the lock and answers logind's signals until ctx ends. Without
// a system bus, or when logind refuses the lock, it logs that once and
// waits: the other triggers still work. It returns nil.
func Run(ctx context.Context, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bus, err := opts.Connect()
	if err != nil {
		log.Info("no system bus: graceful node shutdown is started only by syncpodctl node shutdown or the node agent's SIGTERM",
			"err", err)
		<-ctx.Done()
		return nil
	}
	defer bus.Close()
	if d, err := bus.InhibitDelayMax(); err != nil {
		log.Warn("cannot read logind's InhibitDelayMaxSec", "err", err)
	} else if d < opts.Budget {
		log.Warn("logind's InhibitDelayMaxSec is shorter than the shutdown grace period: logind will not wait for all of it; raise InhibitDelayMaxSec in /etc/systemd/logind.conf.d",
			"inhibit_delay_max", d.String(), "shutdown_grace_period", opts.Budget.String())
	}
	lock, err := bus.Inhibit(inhibitWhat, inhibitWho, inhibitWhy, inhibitMode)
	if err != nil {
		log.Warn("logind refused the shutdown inhibitor lock: graceful node shutdown is started only by syncpodctl node shutdown or the node agent's SIGTERM",
			"err", err)
		<-ctx.Done()
		return nil
	}
	release := func() {
		if lock != nil {
			_ = lock.Close()
			lock = nil
		}
	}
	defer release()
	signals, err := bus.PrepareForShutdown()
	if err != nil {
		log.Warn("cannot watch logind's PrepareForShutdown: graceful node shutdown is started only by syncpodctl node shutdown or the node agent's SIGTERM",
			"err", err)
		release()
		<-ctx.Done()
		return nil
	}
	log.Info("holding logind's shutdown inhibitor lock", "mode", inhibitMode, "budget", opts.Budget.String())
	for {
		select {
		case <-ctx.Done():
			return nil
		case shuttingDown, ok := <-signals:
			if !ok {
				log.Warn("the system bus connection ended: no longer watching logind")
				release()
				<-ctx.Done()
				return nil
			}
			if shuttingDown {
				log.Info("logind announced a shutdown: ending the node's pods")
				if err := opts.Shutdown(ctx); err != nil {
					log.Error("node shutdown failed", "err", err)
				}
				release() // the node may go down now
				continue
			}
			log.Info("logind cancelled the shutdown")
			if err := opts.Cancel(ctx); err != nil {
				log.Warn("cannot cancel the node shutdown", "err", err)
			}
			if lock == nil {
				if lock, err = bus.Inhibit(inhibitWhat, inhibitWho, inhibitWhy, inhibitMode); err != nil {
					log.Warn("cannot take logind's shutdown inhibitor lock again", "err", err)
				}
			}
		}
	}
}
