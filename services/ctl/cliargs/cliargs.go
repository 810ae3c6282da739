package cliargs

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// UsageError is a bad command line.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// PortPair is one [LOCAL:]REMOTE of port-forward; Local 0 asks for a free
// port.
type PortPair struct{ Local, Remote int }

// ParsePorts reads "8080", "8080:80" and ":80" (a free local port).
func ParsePorts(args []string) ([]PortPair, error) {
	var out []PortPair
	for _, a := range args {
		l, r, found := strings.Cut(a, ":")
		if !found {
			r = l
		}
		remote, err := strconv.Atoi(r)
		if err != nil || remote < 1 || remote > 65535 {
			return nil, Usagef("port %q: the remote port must be 1-65535", a)
		}
		local := 0
		if l != "" {
			if local, err = strconv.Atoi(l); err != nil || local < 0 || local > 65535 {
				return nil, Usagef("port %q: the local port must be 0-65535", a)
			}
		}
		out = append(out, PortPair{local, remote})
	}
	return out, nil
}

// WaitFor is a parsed --for value: the pod's deletion, or a condition
// of the pod with the status wanted.
type WaitFor struct {
	Delete bool
	// Condition is the condition's type as written (compared without
	// regard to case); Status is "true" or "false".
	Condition, Status string
}

// ParseWaitFor reads a --for value: delete, condition=NAME or
// condition=NAME=True|False.
func ParseWaitFor(v string) (WaitFor, error) {
	if v == "delete" {
		return WaitFor{Delete: true}, nil
	}
	spec, ok := strings.CutPrefix(v, "condition=")
	if !ok || spec == "" {
		return WaitFor{}, Usagef("--for=%q: want condition=NAME[=VALUE] or delete", v)
	}
	name, want, hasValue := strings.Cut(spec, "=")
	if !hasValue {
		want = "True"
	}
	if !strings.EqualFold(want, "true") && !strings.EqualFold(want, "false") {
		return WaitFor{}, Usagef("--for=%q: a condition is True or False", v)
	}
	return WaitFor{Condition: name, Status: strings.ToLower(want)}, nil
}

// Output is a parsed -o value.
type Output struct {
	// Kind is "", wide, name, json, yaml, jsonpath, proto-json or
	// proto-yaml.
	Kind string
	// JSONPath is the parsed template of jsonpath=TEMPLATE.
	JSONPath *jsonpath.JSONPath
}

// OutputHelp is the -o flag's help.
const OutputHelp = "output: wide, name, json, yaml (Kubernetes v1 Pods), jsonpath=TEMPLATE, proto-json or proto-yaml (syncpod records)"

// ParseOutput checks an -o value.
func ParseOutput(v string) (Output, error) {
	switch v {
	case "", "wide", "name", "json", "yaml", "proto-json", "proto-yaml":
		return Output{Kind: v}, nil
	}
	if tmpl, ok := strings.CutPrefix(v, "jsonpath="); ok {
		jp := jsonpath.New("output")
		jp.AllowMissingKeys(true)
		if err := jp.Parse(tmpl); err != nil {
			return Output{}, Usagef("-o %s: %v", v, err)
		}
		return Output{Kind: "jsonpath", JSONPath: jp}, nil
	}
	return Output{}, Usagef("-o %q: want wide, name, json, yaml, jsonpath=..., proto-json or proto-yaml", v)
}
