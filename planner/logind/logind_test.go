package logind

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeBus is logind: it counts the locks held and feeds the signals the
// test sends.
type fakeBus struct {
	mu       sync.Mutex
	held     int // locks taken and not released
	taken    int
	delay    time.Duration
	signals  chan bool
	inhibit  []string
	closed   bool
	refuseAt int // the n-th Inhibit fails (0: none)
}

type fakeLock struct{ b *fakeBus }

func (l fakeLock) Close() error {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	l.b.held--
	return nil
}

func (b *fakeBus) InhibitDelayMax() (time.Duration, error) { return b.delay, nil }

func (b *fakeBus) Inhibit(what, who, why, mode string) (io.Closer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.taken++
	if b.taken == b.refuseAt {
		return nil, errors.New("access denied")
	}
	b.held++
	b.inhibit = []string{what, who, mode}
	return fakeLock{b}, nil
}

func (b *fakeBus) PrepareForShutdown() (<-chan bool, error) { return b.signals, nil }

func (b *fakeBus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

func (b *fakeBus) state() (held, taken int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.taken
}

type calls struct {
	mu                sync.Mutex
	shutdowns, cancel int
	heldDuring        int
}

// a delay lock for shutdown is held; PrepareForShutdown(true)
// runs the shutdown with the lock held and releases it after;
// PrepareForShutdown(false) cancels and takes it again.
func TestRunHoldsTheLockAndAnswersSignals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := &fakeBus{delay: 30 * time.Second, signals: make(chan bool)}
		var c calls
		var logs bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			_ = Run(ctx, Options{
				Connect: func() (Bus, error) { return bus, nil }, Budget: 40 * time.Second,
				Shutdown: func(context.Context) error {
					c.mu.Lock()
					defer c.mu.Unlock()
					c.shutdowns++
					c.heldDuring, _ = bus.state()
					return nil
				},
				Cancel: func(context.Context) error { c.mu.Lock(); defer c.mu.Unlock(); c.cancel++; return nil },
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			close(done)
		}()
		synctest.Wait()
		if held, _ := bus.state(); held != 1 || strings.Join(bus.inhibit, " ") != "shutdown syncpod delay" {
			t.Fatalf("locks held %d (%v), want one delay lock for shutdown", held, bus.inhibit)
		}
		if !strings.Contains(logs.String(), "InhibitDelayMaxSec is shorter") {
			t.Errorf("no warning about a short InhibitDelayMaxSec: %s", logs.String())
		}
		bus.signals <- true
		synctest.Wait()
		held, _ := bus.state()
		if c.shutdowns != 1 || c.heldDuring != 1 || held != 0 {
			t.Fatalf("shutdowns %d (lock held during: %d), locks after %d; want 1, 1, 0", c.shutdowns, c.heldDuring, held)
		}
		bus.signals <- false
		synctest.Wait()
		if held, taken := bus.state(); c.cancel != 1 || held != 1 || taken != 2 {
			t.Fatalf("cancels %d, locks held %d taken %d; want 1, 1, 2", c.cancel, held, taken)
		}
		cancel()
		<-done
		if held, _ := bus.state(); held != 0 || !bus.closed {
			t.Fatalf("after Run: locks held %d, bus closed %v", held, bus.closed)
		}
	})
}

// Without a system bus, or when logind refuses the lock, Run says so once
// and waits: nothing else is tried.
func TestRunFallsBackQuietly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		connect func() (Bus, error)
		want    string
	}{
		{name: "no system bus", connect: func() (Bus, error) { return nil, errors.New("dial unix /run/dbus/system_bus_socket: no such file") },
			want: "no system bus"},
		{name: "lock refused", connect: func() (Bus, error) { return &fakeBus{refuseAt: 1, signals: make(chan bool)}, nil },
			want: "logind refused the shutdown inhibitor lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs bytes.Buffer
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- Run(ctx, Options{Connect: tc.connect,
						Shutdown: func(context.Context) error { t.Error("shutdown without a signal"); return nil },
						Cancel:   func(context.Context) error { return nil },
						Logger:   slog.New(slog.NewTextHandler(&logs, nil))})
				}()
				time.Sleep(time.Hour)
				synctest.Wait()
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(logs.String(), tc.want); n != 1 {
					t.Fatalf("%q logged %d times, want once: %s", tc.want, n, logs.String())
				}
			})
		})
	}
}
