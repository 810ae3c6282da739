package validate

import "github.com/syncpod/syncpod/proto/fielderr"

// ErrInvalid is the sentinel every validation error matches with errors.Is
// (fielderr.ErrInvalid: the same for every service).
var ErrInvalid = fielderr.ErrInvalid

// FieldError is one problem: the path of the offending field and what is
// wrong with it.
type FieldError = fielderr.FieldError

// Errors is every problem found.
type Errors = fielderr.Errors

// As extracts the field errors of err (nil if err carries none).
func As(err error) Errors { return fielderr.As(err) }
