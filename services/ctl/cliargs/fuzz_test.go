package cliargs

import (
	"errors"
	"testing"
)

// Command-line values syncpodctl parses itself: a bad one is a usage
// error (exit 2), never a panic or another kind of error.

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"80", "8080:80", ":80", "0:1", "x:80", "70000", "-1:2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ports, err := ParsePorts([]string{s})
		var ue UsageError
		if err != nil && !errors.As(err, &ue) {
			t.Fatalf("%q: %v is not a usage error", s, err)
		}
		for _, p := range ports {
			if p.Remote < 1 || p.Remote > 65535 || p.Local < 0 || p.Local > 65535 {
				t.Fatalf("%q gave out-of-range ports %+v", s, p)
			}
		}
	})
}

func FuzzParseWaitFor(f *testing.F) {
	for _, s := range []string{"delete", "condition=Ready", "condition=Ready=False", "condition=", "jsonpath={.x}", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWaitFor(s)
		var ue UsageError
		if err != nil && !errors.As(err, &ue) {
			t.Fatalf("%q: %v is not a usage error", s, err)
		}
		if err == nil && !w.Delete && w.Status != "true" && w.Status != "false" {
			t.Fatalf("%q gave status %q, want true or false", s, w.Status)
		}
	})
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{"", "wide", "yaml", "jsonpath={.items[*].metadata.name}", "jsonpath={", "xml"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := ParseOutput(s)
		var ue UsageError
		if err != nil && !errors.As(err, &ue) {
			t.Fatalf("%q: %v is not a usage error", s, err)
		}
	})
}
