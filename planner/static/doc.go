// Package static keeps the desired-pod store in line with a static
// manifest directory: the kubelet's file pod source, made of the manifest
// reader (package manifest) and the store.
//
// Reconciler.Run first brings the store in line with the directory as it
// is (including manifests removed while the planner was down: static pods
// the directory no longer defines are deleted), then applies every change
// the source reports. Added and updated pods are applied, removed ones are
// marked for deletion (with their grace period). Failures are logged per
// pod and the other pods go on; a change that may succeed later (a pod
// re-added while its old incarnation terminates, a store hiccup) is given
// back to the source to be tried again on its next scan, an invalid pod is
// not (its file has to change first). A broken manifest leaves its pods as
// they were and says so where their readers look: a Warning
// FailedStaticManifest event on each of them.
//
// ConfigMaps and Secrets in the directory (config.go) are applied before
// the pods of the same scan, removed ones deleted; one that may succeed
// later is given back to the source (Source.RetryConfig), an invalid or
// immutable one is not.
package static
