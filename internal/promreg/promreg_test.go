package promreg

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func counter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: "A test counter."})
}

// TestRegister: collectors are registered in order; the first failure (a
// name already taken) is returned and stops the rest.
func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := counter("syncpod_test_a_total"), counter("syncpod_test_b_total")
	if err := Register(reg, a, b); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 2 {
		t.Fatalf("gathered %d metrics (%v), want 2", n, err)
	}
	c := counter("syncpod_test_c_total")
	err := Register(reg, counter("syncpod_test_a_total"), c)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("registering a taken name: %v, want AlreadyRegisteredError", err)
	}
	if reg.Unregister(c) {
		t.Error("a collector after the failing one was registered")
	}
}

// TestRegisterNil: a nil registry registers nothing and the collectors
// still count.
func TestRegisterNil(t *testing.T) {
	a := counter("syncpod_test_a_total")
	if err := Register(nil, a); err != nil {
		t.Fatal(err)
	}
	a.Inc()
	if got := testutil.ToFloat64(a); got != 1 {
		t.Errorf("counter = %v, want 1", got)
	}
}
