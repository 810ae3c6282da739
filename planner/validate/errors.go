package validate

import (
	"errors"
	"fmt"
	"strings"
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

// Error implements error as "path: message".
func (e FieldError) Error() string { return e.Path + ": " + e.Message }

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

// Prefix returns e with every path prefixed by p: "p.path", or "p[i]..."
// when the path starts with an index.
func (e Errors) Prefix(p string) Errors {
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

// list accumulates field errors.
type list struct{ errs Errors }

func (l *list) add(path, format string, args ...any) {
	l.errs = append(l.errs, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}
