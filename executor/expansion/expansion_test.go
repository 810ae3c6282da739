package expansion

import (
	"slices"
	"strings"
	"testing"
)

// TestExpand is the kubelet's documented expansion behaviour (the API
// reference of command, args and env[].value): $(VAR) is replaced, $$ is
// an escaped $, an undefined reference stays as written, a replacement is
// never rescanned.
func TestExpand(t *testing.T) {
	vars := MapLookup(map[string]string{
		"VAR_A": "A", "VAR_B": "B", "VAR_REF": "$(VAR_A)", "EMPTY": "", "DOLLAR": "$", "SPACED": "a b",
	})
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"no references", "no references"},
		{"$(VAR_A)", "A"},
		{"___$(VAR_B)___", "___B___"},
		{"$(VAR_A)-$(VAR_A)", "A-A"},
		{"$(VAR_A)$(VAR_B)", "AB"},
		{"$(VAR_REF)", "$(VAR_A)"},       // not rescanned
		{"$(EMPTY)x", "x"},               // defined as empty
		{"$(SPACED)", "a b"},             // one argument, not split
		{"$(UNDEFINED)", "$(UNDEFINED)"}, // undefined stays literal
		{"x$(UNDEFINED)y", "x$(UNDEFINED)y"},
		{"$$(VAR_A)", "$(VAR_A)"},         // escaped
		{"$$$(VAR_A)", "$A"},              // escape, then a reference
		{"$$$$(VAR_A)", "$$(VAR_A)"},      // two escapes
		{"$$$$$$(DOLLAR)", "$$$(DOLLAR)"}, // three escapes
		{"$$$$$$$(DOLLAR)", "$$$$"},       // three escapes and a $ value
		{"$$", "$"},
		{"$$$", "$$"}, // escape, then a trailing $
		{"$", "$"},
		{"x$", "x$"},
		{"$(VAR_A)$", "A$"},
		{"$VAR_A", "$VAR_A"},   // no parentheses: literal
		{"$(VAR_A", "$(VAR_A"}, // unclosed
		{"$(", "$("},
		{"$$(", "$("},
		{"$()", "$()"},                           // empty name: undefined
		{"$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"}, // no nesting: name "VAR_A$(VAR_B" is undefined
		{"$(unclosed $(VAR_B)", "$(unclosed $(VAR_B)"},
		{"$(VAR_A)é$(VAR_B)", "AéB"},
		{"€$(VAR_A)", "€A"},
		{"$é", "$é"},
	} {
		if got := Expand(tc.in, vars); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAll(t *testing.T) {
	vars := MapLookup(map[string]string{"N": "3"})
	if got := All(nil, vars); got != nil {
		t.Errorf("All(nil) = %q", got)
	}
	in := []string{"sleep", "$(N)", "$$(N)"}
	if got, want := All(in, vars), []string{"sleep", "3", "$(N)"}; !slices.Equal(got, want) {
		t.Errorf("All = %q, want %q", got, want)
	}
	if in[1] != "$(N)" {
		t.Error("All modified its input")
	}
}

// FuzzExpand: whatever the input, expansion never panics; with nothing
// defined it never grows the input, and an input without "$$" comes back
// unchanged.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"$(A)", "$$(A)", "$(", "$", "a$b$(c)d$$"} {
		f.Add(s)
	}
	none := func(string) (string, bool) { return "", false }
	f.Fuzz(func(t *testing.T, s string) {
		got := Expand(s, none)
		if len(got) > len(s) {
			t.Fatalf("Expand(%q) with nothing defined grew to %q", s, got)
		}
		if !strings.Contains(s, "$$") && got != s {
			t.Fatalf("Expand(%q) with nothing defined = %q", s, got)
		}
		_ = Expand(s, func(string) (string, bool) { return "x", true })
	})
}
