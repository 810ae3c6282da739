// Package validate checks the executor's requests before anything is
// created: the pod and observed pod by the shared rules of
// proto/validation, the change set against the pod, and every list and
// string bounded, all problems at once as fielderr.Errors. It imports no
// gRPC server, CRI or storage code, so its fuzz target builds quickly.
package validate
