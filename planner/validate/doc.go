// Package validate checks wire input before the planner acts on it: a
// desired Pod (shared by Plan and ApplyPod), an ObservedPod, probe results,
// the whole Plan request and the pod references and filters of the pod
// RPCs. The rules for the shared types live in proto/validation, so that
// the executor applies the same ones; this package adds what only the
// planner sees. Every function returns all problems at once as an Errors
// value (fielderr's list of FieldError{Path, Message}); errors.Is(err,
// ErrInvalid) holds for it, so the gRPC layer maps it to InvalidArgument
// with a google.rpc.BadRequest.
//
// Field paths use proto field names and indices, relative to the value
// checked: "spec.containers[1].name" for Pod, "containers[0].id" for
// Observed, "[2].name" for Probes. Request prefixes them with "pod.",
// "observed." and "probes".
//
// Limits are those of proto/validation (at most 64 init and regular
// containers together, argv and environment within the kernel's
// MAX_ARG_STRLEN and ARG_MAX, 256 KiB of annotations, names as Kubernetes
// bounds them), plus at most MaxProbes probe results per Plan request.
package validate
