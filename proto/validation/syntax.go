package validation

import "strings"

func isAlnumLower(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }

func isAlnum(b byte) bool { return isAlnumLower(b) || b >= 'A' && b <= 'Z' }

// isDNS1123Label: lower-case alphanumerics and '-', starting and ending
// with an alphanumeric, at most 63 characters.
func isDNS1123Label(s string) bool {
	if len(s) == 0 || len(s) > 63 || !isAlnumLower(s[0]) || !isAlnumLower(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnumLower(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain: dot-separated DNS-1123 labels, at most 253 characters.
func isDNS1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !isDNS1123Label(part) {
			return false
		}
	}
	return true
}

// isLabelName is the name part of a Kubernetes qualified name: at most 63
// alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric.
func isLabelName(s string) bool {
	if len(s) == 0 || len(s) > 63 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; !isAlnum(b) && b != '-' && b != '_' && b != '.' {
			return false
		}
	}
	return true
}

// qualifiedNameProblem checks a label or annotation key: [prefix/]name with
// a DNS-1123 subdomain prefix. It returns "" when the key is valid.
func qualifiedNameProblem(k string) string {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name = prefix
		prefix = ""
	}
	switch {
	case hasPrefix && !isDNS1123Subdomain(prefix):
		return "key prefix must be a DNS-1123 subdomain"
	case !isLabelName(name):
		return "key name must be at most 63 characters of letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	}
	return ""
}

// isLabelValue: empty, or a label name.
func isLabelValue(s string) bool { return s == "" || isLabelName(s) }

// isEnvName: letters, digits, '_', '-' and '.', not starting with a digit.
func isEnvName(s string) bool {
	if len(s) == 0 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; !isAlnum(b) && b != '_' && b != '-' && b != '.' {
			return false
		}
	}
	return true
}

// isPortName is an IANA service name: at most 15 lower-case alphanumerics
// and '-', at least one letter, no leading, trailing or double '-'.
func isPortName(s string) bool {
	if len(s) == 0 || len(s) > 15 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	letter := false
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !isAlnumLower(b) && b != '-' {
			return false
		}
		letter = letter || b >= 'a' && b <= 'z'
	}
	return letter
}

// isUUID: the RFC 4122 textual form, 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch i {
		case 8, 13, 18, 23:
			if b != '-' {
				return false
			}
		default:
			if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F') {
				return false
			}
		}
	}
	return true
}

func hasSpace(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
	})
}
