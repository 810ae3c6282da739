package validation

import "strings"

func isAlnumLower(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }

func isAlnum(b byte) bool { return isAlnumLower(b) || b >= 'A' && b <= 'Z' }

// isDNS1123Label: lower-case alphanumerics and '-', starting and ending
// with an alphanumeric, at most 63 characters.
func isDNS1123Label(s string) bool { return len(s) <= 63 && isDNSPart(s) }

// isDNSPart: one dot-free part of a DNS-1123 name, of any length:
// lower-case alphanumerics and '-', starting and ending with an
// alphanumeric.
func isDNSPart(s string) bool {
	if len(s) == 0 || !isAlnumLower(s[0]) || !isAlnumLower(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnumLower(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain: dot-separated parts of lower-case alphanumerics and
// '-', each starting and ending with an alphanumeric, at most 253
// characters in all. As with the API server (IsDNS1123Subdomain), a part
// has no length limit of its own: a pod may be named with 200 characters
// and no dot.
func isDNS1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !isDNSPart(part) {
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

// isEnvName is the API server's rule for env names and envFrom prefixes
// since RelaxedEnvironmentVariableValidation (GA in Kubernetes 1.34): at
// least one character, each printable ASCII (space to '~') but '='
//
func isEnvName(s string) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < ' ' || b > '~' || b == '=' {
			return false
		}
	}
	return true
}

// envNameRule says what isEnvName wants, for messages.
const envNameRule = "must consist of printable ASCII characters other than '='"

// EnvNameProblem says what is wrong with an environment variable name (as
// an env entry's name, an envFrom prefix, or a prefix and a key joined),
// or "" when nothing is.
func EnvNameProblem(s string) string {
	if !isEnvName(s) {
		return envNameRule
	}
	return ""
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
