// Package validate checks wire input before the planner acts on it: a
// desired Pod (shared by Plan and ApplyPod), an ObservedPod and probe
// results. Every function returns all problems at once as an Errors value
// (a list of FieldError{Path, Message}); errors.Is(err, ErrInvalid) holds for
// it, so the gRPC layer maps it to InvalidArgument with a google.rpc.BadRequest.
//
// Field paths use proto field names and indices, relative to the value
// checked: "spec.containers[1].name" for Pod, "containers[0].id" for
// Observed, "[2].name" for Probes. Request prefixes them with "pod.",
// "observed." and "probes".
//
// Limits (beyond Kubernetes' own syntax rules): at most 64 init and regular
// containers together, 1024 env entries per container, 1024 command or args
// entries, 64 ports per container, 20 restart rules of at most 255 exit codes,
// 256 KiB of annotations, images of at most 4096 bytes, and names as
// Kubernetes bounds them (pod 253, namespace/container/label names 63).
package validate
