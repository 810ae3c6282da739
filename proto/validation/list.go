package validation

import (
	"fmt"
	"maps"
	"slices"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// list accumulates field errors for the checks of this package.
type list struct{ fielderr.List }

// check records problem at path unless it is "".
func (l *list) check(path, problem string) {
	if problem != "" {
		l.Add(path, "%s", problem)
	}
}

// MapPath is the path of a map entry, its key quoted and cut so that a
// huge key never makes a huge path: `labels["app"]`.
func MapPath(field, key string) string { return field + "[" + fielderr.Quote(key) + "]" }

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// NameProblem says what is wrong with a pod name (a DNS-1123 subdomain of
// at most 253 characters), or "" when nothing is.
func NameProblem(s string) string {
	if !isDNS1123Subdomain(s) {
		return "must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)" + lenNote(s, MaxNameLen)
	}
	return ""
}

// NamespaceProblem says what is wrong with a namespace (a DNS-1123 label
// of at most 63 characters), or "" when nothing is.
func NamespaceProblem(s string) string {
	if !isDNS1123Label(s) {
		return "must be a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)" + lenNote(s, MaxLabelLen)
	}
	return ""
}

// ContainerNameProblem says what is wrong with a container name (a
// DNS-1123 label), or "" when nothing is.
func ContainerNameProblem(s string) string { return NamespaceProblem(s) }

// UIDProblem says what is wrong with a pod uid (the RFC 4122 textual form),
// or "" when nothing is.
func UIDProblem(s string) string {
	if !isUUID(s) {
		return "must be an RFC 4122 UUID (8-4-4-4-12 hex digits)" + lenNote(s, 36)
	}
	return ""
}

// lenNote tells the length of s when it is over max, so that a message
// about a huge value says how huge without echoing it.
func lenNote(s string, max int) string {
	if len(s) > max {
		return fmt.Sprintf(", got %d bytes", len(s))
	}
	return ""
}

// argvPart is one list of strings that goes onto a process's argv or envp.
type argvPart struct {
	field string
	vals  []string
}

// argv checks lists that together make one exec: each at most MaxArgs
// entries, each string at most MaxArgLen bytes with its NUL, all of them
// at most MaxArgvBytes. It returns the bytes counted.
func (l *list) argv(path string, parts ...argvPart) int {
	total := 0
	for _, p := range parts {
		if len(p.vals) > MaxArgs {
			l.Add(path+"."+p.field, "%d entries exceed the limit of %d", len(p.vals), MaxArgs)
		}
		for i, v := range p.vals {
			if len(v)+1 > MaxArgLen {
				l.Add(fmt.Sprintf("%s.%s[%d]", path, p.field, i), "%d bytes exceed the kernel's limit of %d per argument (MAX_ARG_STRLEN)", len(v), MaxArgLen-1)
			}
			total += len(v) + 1
		}
	}
	return total
}

// exec checks what becomes the container process's argv and envp.
func (l *list) exec(path string, c *syncpodv1.Container) {
	total := l.argv(path, argvPart{"command", c.GetCommand()}, argvPart{"args", c.GetArgs()})
	for i, e := range c.GetEnv() {
		n := len(e.GetName()) + 1 + len(e.GetValue()) + 1
		if n > MaxArgLen {
			l.Add(fmt.Sprintf("%s.env[%d].value", path, i), "%d bytes exceed the kernel's limit of %d per environment string NAME=value (MAX_ARG_STRLEN)", len(e.GetValue()), MaxArgLen-1)
		}
		total += n
	}
	if total > MaxArgvBytes {
		l.Add(path, "command, args and env take %d bytes, over the kernel's limit of %d (ARG_MAX)", total, MaxArgvBytes)
	}
}
