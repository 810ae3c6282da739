package fielderr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrInvalid is the sentinel every validation error matches with errors.Is.
var ErrInvalid = errors.New("invalid argument")

// FieldError is one problem: the path of the offending field and what is
// wrong with it.
type FieldError struct {
	// Path is the field path, e.g. "spec.containers[1].name".
	Path string
	// Message says what is wrong, e.g. "must be a DNS-1123 label".
	Message string
}

// Error implements error as "path: message" (just the message when the
// path is empty).
func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Errors is every problem found; a nil or empty Errors is no error (use
// Err to turn it into an error value).
type Errors []FieldError

// Error lists every problem, separated by "; ".
func (e Errors) Error() string {
	parts := make([]string, len(e))
	for i, fe := range e {
		parts[i] = fe.Error()
	}
	return fmt.Sprintf("%d invalid field(s): %s", len(e), strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e Errors) Is(target error) bool { return target == ErrInvalid }

// Err returns e as an error, or nil when it is empty.
func (e Errors) Err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// Prefix returns e with every path prefixed by p: "p.path", "p[i]..." when
// the path starts with an index, or p alone when the path is empty.
func (e Errors) Prefix(p string) Errors {
	if p == "" {
		return e
	}
	out := make(Errors, len(e))
	for i, fe := range e {
		switch {
		case fe.Path == "":
			fe.Path = p
		case strings.HasPrefix(fe.Path, "["):
			fe.Path = p + fe.Path
		default:
			fe.Path = p + "." + fe.Path
		}
		out[i] = fe
	}
	return out
}

// As extracts the field errors of err (nil if err carries none).
func As(err error) Errors {
	var e Errors
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// List accumulates field errors. The zero value is ready to use.
type List struct{ errs Errors }

// Add records a problem at path; format and args make the message (use
// Quote for values taken from the request).
func (l *List) Add(path, format string, args ...any) {
	l.errs = append(l.errs, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Append records problems found elsewhere, with their paths prefixed by p.
func (l *List) Append(p string, errs Errors) {
	l.errs = append(l.errs, errs.Prefix(p)...)
}

// Errors returns what was recorded.
func (l *List) Errors() Errors { return l.errs }

// Err returns what was recorded as an error, nil when nothing was.
func (l *List) Err() error { return l.errs.Err() }

// Len is the number of problems recorded.
func (l *List) Len() int { return len(l.errs) }

// MaxQuoted is how many bytes of a value Quote shows.
const MaxQuoted = 64

// Quote returns s as a Go-quoted string, cut to MaxQuoted bytes (at a rune
// boundary) with an ellipsis and the full length when longer, so an error
// message never echoes a huge input: `"aaaa…" (1048576 bytes)`.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]+"…") + " (" + strconv.Itoa(len(s)) + " bytes)"
}
