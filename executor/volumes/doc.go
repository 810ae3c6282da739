// Package volumes materialises a pod's volumes on the node and turns them
// into CRI mounts and environment variables, as the kubelet's volume
// manager and its env builder do.
//
// # Layout on disk
//
// The executor owns the node's pod directories (docs/design.md). Under the
// Manager's root:
//
//	<root>/<pod uid>/volumes/empty-dir/<volume>     emptyDir (disk); a tmpfs mount point for medium Memory
//	<root>/<pod uid>/volumes/config-map/<volume>    configMap files
//	<root>/<pod uid>/volumes/secret/<volume>        secret files
//	<root>/<pod uid>/volumes/projected/<volume>     projected files
//	<root>/<pod uid>/volumes/downward-api/<volume>  downwardAPI files
//
// hostPath volumes are checked (and created for the *OrCreate types) at
// their node path and mounted from there.
//
// # Promises
//
//   - Setup is idempotent: an emptyDir keeps its content across container
//     restarts and sandbox re-creations; it goes only with Remove.
//   - configMap, secret, projected and downwardAPI directories are written
//     like the kubelet's atomic writer: the files live in a timestamped
//     directory "..<time>.<random>", a "..data" symlink points at it, and
//     each visible name is a symlink through "..data". An update writes a
//     new timestamped directory and renames a new "..data" link over the
//     old one, so a reader sees either the old or the new set, never a mix;
//     unchanged content writes nothing.
//   - A missing non-optional ConfigMap, Secret or key is an error naming
//     it as the kubelet does (configmap "x" not found); an optional one
//     projects nothing.
//   - medium: Memory is a tmpfs (size = sizeLimit) when the executor may
//     mount (root), and so is every secret volume, as with the kubelet
//     (Secret values stay in RAM); otherwise a plain directory, logged
//     once. Remove unmounts them before it deletes, and never deletes
//     through a mount point it did not make.
//   - A mount's sub path (subPath, or subPathExpr expanded against the
//     container's environment) is relative, holds no "..", and resolves
//     inside its volume; a missing one is created with the volume
//     directory's mode.
//   - Secret values are never logged.
package volumes
