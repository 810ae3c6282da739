package evictionplan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal, named as the kubelet names it.
type Signal string

// The signals syncpod observes.
const (
	MemoryAvailable   Signal = "memory.available"
	NodeFsAvailable   Signal = "nodefs.available"
	NodeFsInodesFree  Signal = "nodefs.inodesFree"
	ImageFsAvailable  Signal = "imagefs.available"
	ImageFsInodesFree Signal = "imagefs.inodesFree"
	PIDAvailable      Signal = "pid.available"
)

// Signals lists every signal in the kubelet's order.
var signals = []Signal{MemoryAvailable, NodeFsAvailable, NodeFsInodesFree, ImageFsAvailable, ImageFsInodesFree, PIDAvailable}

// Resource is the resource a signal starves, as the kubelet names it in
// its messages and events.
func (s Signal) Resource() string {
	switch s {
	case MemoryAvailable:
		return "memory"
	case NodeFsAvailable, ImageFsAvailable:
		return "ephemeral-storage"
	case NodeFsInodesFree, ImageFsInodesFree:
		return "inodes"
	case PIDAvailable:
		return "pids"
	}
	return ""
}

// Condition is the node condition a signal under pressure sets:
// MemoryPressure, DiskPressure or PIDPressure.
func (s Signal) Condition() string {
	switch s {
	case MemoryAvailable:
		return MemoryPressure
	case PIDAvailable:
		return PIDPressure
	case "":
		return ""
	}
	return DiskPressure
}

// Value is a threshold's or a minimum reclaim's amount: Quantity bytes
// (or a count), or Percentage of the signal's capacity when Quantity is 0.
type Value struct {
	Quantity int64
	// Text is Quantity as it was written ("100Mi"), for messages.
	Text       string
	Percentage float64 // 0 <= p < 1
}

// Of is v's amount for a signal of capacity.
func (v Value) Of(capacity int64) int64 {
	if v.Quantity > 0 || v.Percentage == 0 {
		return v.Quantity
	}
	return int64(v.Percentage * float64(capacity))
}

// text is v's amount as the kubelet prints a threshold quantity.
func (v Value) text(capacity int64) string {
	if v.Text != "" {
		return v.Text
	}
	return quantity(v.Of(capacity))
}

// Threshold is one eviction threshold: Signal is met when its available
// amount is below Value. A hard threshold (GracePeriod 0) acts at once, a
// soft one once it has been met for GracePeriod. Once met it holds until
// the available amount is at least Value plus MinReclaim.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration
	MinReclaim  Value
}

// Hard says whether t acts without a grace period.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// Config is the thresholds as the four flags give them.
type Config struct {
	Hard, Soft, SoftGracePeriod, MinimumReclaim string
}

// DefaultHard is the kubelet's default --eviction-hard on Linux.
const DefaultHard = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%"

// Parse reads the thresholds of c as the kubelet does: hard and
// soft statements "signal<quantity" or "signal<percent%", soft grace
// periods and minimum reclaims "signal=value"; a soft threshold needs a
// grace period; every problem at once, each naming its flag.
func Parse(c Config) ([]Threshold, error) {
	var errs []error
	hard, err := parseStatements("--eviction-hard", c.Hard)
	errs = append(errs, err)
	soft, err := parseStatements("--eviction-soft", c.Soft)
	errs = append(errs, err)
	grace := map[Signal]time.Duration{}
	for _, kv := range pairs(c.SoftGracePeriod) {
		sig, val, err := signalValue("--eviction-soft-grace-period", kv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("--eviction-soft-grace-period %q: want a non-negative duration such as 1m30s", kv))
			continue
		}
		grace[sig] = d
	}
	minReclaim := map[Signal]Value{}
	for _, kv := range pairs(c.MinimumReclaim) {
		sig, val, err := signalValue("--eviction-minimum-reclaim", kv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		v, err := parseValue(val, true)
		if err != nil {
			errs = append(errs, fmt.Errorf("--eviction-minimum-reclaim %q: %w", kv, err))
			continue
		}
		minReclaim[sig] = v
	}
	for i := range soft {
		d, ok := grace[soft[i].Signal]
		if !ok || d == 0 {
			errs = append(errs, fmt.Errorf("--eviction-soft %s: a soft threshold needs a grace period in --eviction-soft-grace-period", soft[i].Signal))
			continue
		}
		soft[i].GracePeriod = d
	}
	out := append(hard, soft...)
	for i := range out {
		out[i].MinReclaim = minReclaim[out[i].Signal]
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func pairs(s string) []string {
	var out []string
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			out = append(out, kv)
		}
	}
	return out
}

func signalValue(flag, kv string) (Signal, string, error) {
	name, val, ok := strings.Cut(kv, "=")
	if !ok {
		return "", "", fmt.Errorf("%s %q: want signal=value", flag, kv)
	}
	sig := Signal(strings.TrimSpace(name))
	if !slices.Contains(signals, sig) {
		return "", "", fmt.Errorf("%s %q: %w", flag, kv, unknownSignal(sig))
	}
	return sig, strings.TrimSpace(val), nil
}

func unknownSignal(s Signal) error {
	names := make([]string, len(signals))
	for i, s := range signals {
		names[i] = string(s)
	}
	return fmt.Errorf("unknown signal %q (%s)", s, strings.Join(names, ", "))
}

func parseStatements(flag, s string) ([]Threshold, error) {
	var out []Threshold
	var errs []error
	seen := map[Signal]bool{}
	for _, term := range pairs(s) {
		name, val, ok := strings.Cut(term, "<")
		if !ok {
			errs = append(errs, fmt.Errorf("%s %q: want signal<quantity or signal<percent%%", flag, term))
			continue
		}
		sig := Signal(strings.TrimSpace(name))
		if !slices.Contains(signals, sig) {
			errs = append(errs, fmt.Errorf("%s %q: %w", flag, term, unknownSignal(sig)))
			continue
		}
		if seen[sig] {
			errs = append(errs, fmt.Errorf("%s %q: %s is given twice", flag, term, sig))
			continue
		}
		seen[sig] = true
		v, err := parseValue(strings.TrimSpace(val), false)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", flag, term, err))
			continue
		}
		out = append(out, Threshold{Signal: sig, Value: v})
	}
	return out, errors.Join(errs...)
}

// parseValue reads "100Mi" or "10%"; zero is allowed for a minimum
// reclaim only.
func parseValue(s string, zeroOK bool) (Value, error) {
	if p, isPct := strings.CutSuffix(s, "%"); isPct {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f >= 100 || (f == 0 && !zeroOK) {
			return Value{}, errors.New("percentage must be in (0, 100)")
		}
		return Value{Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() < 0 || (q.Sign() == 0 && !zeroOK) {
		return Value{}, errors.New("quantity must be positive, such as 100Mi")
	}
	if q.CmpInt64(math.MaxInt64) > 0 {
		return Value{}, errors.New("quantity is too large")
	}
	return Value{Quantity: q.Value(), Text: q.String()}, nil
}

// quantity prints n bytes as the kubelet prints a measured amount (a
// binary-SI resource.Quantity).
func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// decimal prints a count as a decimal-SI resource.Quantity.
func decimal(n int64) string {
	return resource.NewQuantity(n, resource.DecimalSI).String()
}
