// Package logquery parses the query of the kubelet's /containerLogs
// requests (follow, previous, timestamps, tailLines, limitBytes,
// sinceSeconds, sinceTime, stream), as the node agent's read API serves
// them.
//
// It is a leaf with standard-library imports only: its parser is fuzzed,
// and a fuzz build instruments every package it links.
package logquery

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Stream is which of a container's output streams a query asks for.
type Stream int

// The streams of the query parameter stream: All (or absent), Stdout,
// Stderr.
const (
	All Stream = iota
	Stdout
	Stderr
)

// Query is a /containerLogs query, parsed and checked.
type Query struct {
	Follow, Previous, Timestamps bool
	// TailLines is nil for every line.
	TailLines *int64
	// LimitBytes is 0 for no limit.
	LimitBytes int64
	// SinceTime is nil for no lower bound (sinceSeconds becomes a time).
	SinceTime *time.Time
	Stream    Stream
}

// Parse reads q as the kubelet does, at now (for sinceSeconds); every
// problem at once.
func Parse(q map[string][]string, now time.Time) (Query, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var errs []error
	boolean := func(k string) bool {
		s := get(k)
		if s == "" {
			return false
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a boolean", k, s))
		}
		return b
	}
	var out Query
	out.Follow = boolean("follow")
	out.Previous = boolean("previous")
	out.Timestamps = boolean("timestamps")
	if s := get("tailLines"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("tailLines: %q must be a whole number >= 0", s))
		} else {
			out.TailLines = &n
		}
	}
	if s := get("limitBytes"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("limitBytes: %q must be a whole number >= 1", s))
		} else {
			out.LimitBytes = n
		}
	}
	sinceSeconds, sinceTime := get("sinceSeconds"), get("sinceTime")
	switch {
	case sinceSeconds != "" && sinceTime != "":
		errs = append(errs, errors.New("sinceSeconds, sinceTime: at most one of them"))
	case sinceSeconds != "":
		n, err := strconv.ParseInt(sinceSeconds, 10, 64)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("sinceSeconds: %q must be a whole number >= 1", sinceSeconds))
		} else {
			t := now.Add(-time.Duration(n) * time.Second)
			out.SinceTime = &t
		}
	case sinceTime != "":
		t, err := time.Parse(time.RFC3339Nano, sinceTime)
		if err != nil {
			errs = append(errs, fmt.Errorf("sinceTime: %q is not an RFC 3339 time", sinceTime))
		} else {
			out.SinceTime = &t
		}
	}
	switch s := get("stream"); s {
	case "", "All":
	case "Stdout":
		out.Stream = Stdout
	case "Stderr":
		out.Stream = Stderr
	default:
		errs = append(errs, fmt.Errorf("stream: %q must be All, Stdout or Stderr", s))
	}
	return out, errors.Join(errs...)
}
