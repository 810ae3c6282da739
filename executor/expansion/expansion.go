package expansion

import "strings"

// Lookup returns the value of a variable and whether it is defined.
type Lookup func(name string) (string, bool)

// Expand returns s with every $(NAME) whose NAME lookup defines replaced
// by its value. Scanning is left to right and a replacement is never
// rescanned.
func Expand(s string, lookup Lookup) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$': // an escaped "$"
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 { // unclosed: "$(" is literal, the rest is scanned on
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default: // "$" starting no reference, and the byte after it
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

// All expands each string of in; nil stays nil.
func All(in []string, lookup Lookup) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = Expand(s, lookup)
	}
	return out
}

// MapLookup looks names up in m.
func MapLookup(m map[string]string) Lookup {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}
