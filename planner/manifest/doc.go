// Package manifest reads static pod manifests: Kubernetes v1 Pod objects in
// YAML or JSON, converted to syncpod's Pod.
//
// # What is accepted
//
// A file holds one or more Pod documents. YAML documents are separated by
// lines that are exactly "---"; a JSON file holds one object. Empty
// documents (only comments or blanks) are skipped. A file is all or
// nothing: if any document has an error, Parse returns no pods for it, so a
// file never half-applies.
//
// # Nothing is dropped silently
//
// Every field that is set (non-empty) and that syncpod does not implement
// is reported with its field path, e.g.
// "spec.containers[0].volumeMounts: not supported". Fields that only matter
// to a cluster (scheduling hints, server-set metadata, status,
// terminationMessagePath...) are warnings and the pod is still accepted;
// everything else (volumes, securityContext, lifecycle hooks, envFrom,
// env[].valueFrom, grpc probes, named probe ports, resources other than cpu
// and memory, unknown fields...) is an error and the file is refused. What
// is converted: metadata name, namespace, uid, labels and annotations; the
// pod's restart policy, termination grace period, host network and
// hostname; init and regular containers with image, command, args, working
// dir, env values, pull policy, container restart policy and restart policy
// rules, ports, cpu/memory requests and limits, and exec, tcpSocket and
// httpGet probes with their timing fields.
//
// # Watching a directory
//
// Source watches a directory with file-system notifications (inotify, via
// fsnotify) and also scans it at an interval as a safety net, and reports
// what changed as a Diff of added, updated and removed pods, hashing file contents so that
// unchanged files are not parsed again. A file that cannot be read or
// parsed is reported once per change in Diff.Errors and leaves every pod
// alone — including the pods it defined before it broke. Hidden files
// (".name.yaml") are ignored, so a writer that wants a file to appear whole
// writes a hidden file and renames it, as with the kubelet.
package manifest
