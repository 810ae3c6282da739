// Package fielderr is syncpod's one convention for bad wire input, shared
// by the planner, the executor and the PLEG: every problem of a request is
// a FieldError{Path, Message}, all of them are reported at once as an
// Errors value (errors.Is(err, ErrInvalid) holds), and Status turns them
// into a gRPC InvalidArgument status with a google.rpc.BadRequest detail.
// StatusOf is the mapping every service's one error-to-status function
// starts with (any ErrInvalid-class error gets a BadRequest detail, with
// or without field paths); FromStatus is the client side, reading the
// field errors back out of a status (syncpodctl prints them a line each).
//
// Paths use proto field names and indices ("spec.containers[1].name",
// `labels["app"]`); Prefix makes them relative to an enclosing message.
// Messages never echo a large input: Quote cuts a value to MaxQuoted bytes,
// and Status bounds the number of problems it lists and the length of each,
// so a status always fits in gRPC trailers whatever the request held.
//
// It imports nothing of syncpod, so every module can use it.
package fielderr
