package logind

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/godbus/dbus/v5"
)

const (
	logindService   = "org.freedesktop.login1"
	logindPath      = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
)

// DBus is logind over the system bus.
type DBus struct{ conn *dbus.Conn }

// ConnectSystemBus connects to the system bus.
func ConnectSystemBus() (Bus, error) {
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		return nil, err
	}
	return &DBus{conn: conn}, nil
}

func (b *DBus) manager() dbus.BusObject { return b.conn.Object(logindService, logindPath) }

// InhibitDelayMax implements Bus.
func (b *DBus) InhibitDelayMax() (time.Duration, error) {
	v, err := b.manager().GetProperty(logindInterface + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, fmt.Errorf("read logind's InhibitDelayMaxUSec: %w", err)
	}
	us, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("logind's InhibitDelayMaxUSec is a %T, not a uint64", v.Value())
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Inhibit implements Bus.
func (b *DBus) Inhibit(what, who, why, mode string) (io.Closer, error) {
	var fd dbus.UnixFD
	if err := b.manager().Call(logindInterface+".Inhibit", 0, what, who, why, mode).Store(&fd); err != nil {
		return nil, fmt.Errorf("take logind's inhibitor lock: %w", err)
	}
	return os.NewFile(uintptr(fd), "logind-inhibitor"), nil
}

// PrepareForShutdown implements Bus.
func (b *DBus) PrepareForShutdown() (<-chan bool, error) {
	if err := b.conn.AddMatchSignal(dbus.WithMatchInterface(logindInterface), dbus.WithMatchMember("PrepareForShutdown"),
		dbus.WithMatchObjectPath(logindPath)); err != nil {
		return nil, fmt.Errorf("watch logind's PrepareForShutdown: %w", err)
	}
	in := make(chan *dbus.Signal, 4)
	b.conn.Signal(in)
	out := make(chan bool, 1)
	go func() {
		defer close(out)
		for sig := range in {
			if sig == nil || sig.Name != logindInterface+".PrepareForShutdown" || len(sig.Body) == 0 {
				continue
			}
			if v, ok := sig.Body[0].(bool); ok {
				out <- v
			}
		}
	}()
	return out, nil
}

// Close implements Bus.
func (b *DBus) Close() error { return b.conn.Close() }
