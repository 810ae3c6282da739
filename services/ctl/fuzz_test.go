package ctl

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
		ports, err := parsePorts([]string{s})
		var ue usageError
		if err != nil && !errors.As(err, &ue) {
			t.Fatalf("%q: %v is not a usage error", s, err)
		}
		for _, p := range ports {
			if p.remote < 1 || p.remote > 65535 || p.local < 0 || p.local > 65535 {
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
		cond, err := parseWaitFor(s)
		var ue usageError
		if err != nil && !errors.As(err, &ue) {
			t.Fatalf("%q: %v is not a usage error", s, err)
		}
		if err == nil {
			_, _ = cond(nil) // a gone pod must not panic the test
		}
	})
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{"", "wide", "yaml", "jsonpath={.items[*].metadata.name}", "jsonpath={", "xml"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parseOutput(s)
		var ue usageError
		if err != nil && !errors.As(err, &ue) {
			t.Fatalf("%q: %v is not a usage error", s, err)
		}
	})
}
