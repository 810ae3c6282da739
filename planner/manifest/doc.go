// Package manifest reads static pod manifests: Kubernetes v1 Pod,
// ConfigMap and Secret objects in YAML or JSON, converted to syncpod's Pod,
// ConfigMap and Secret (ParseObjects; Parse returns the pods).
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
// "spec.volumes[0].nfs: not supported". Fields that only matter
// to a cluster (scheduling hints, server-set metadata, status,
// terminationMessagePath...) are warnings and the pod is still accepted;
// everything else (volume types other than emptyDir, hostPath, configMap,
// secret, projected and downwardAPI, securityContext, lifecycle hooks, named
// probe ports, resources other than cpu and memory, unknown
// fields...) is an error and the file is refused. What is converted:
// metadata name, namespace, uid, labels and annotations; the pod's restart
// policy, termination grace period, host network, hostname, os, overhead
// (cpu and memory) and volumes (a volume naming no source is an emptyDir,
// as the API server defaults it);
// init and regular containers with image, command, args, working dir, env
// values and valueFrom (fieldRef, resourceFieldRef, configMapKeyRef,
// secretKeyRef, fileKeyRef), envFrom, volumeMounts, pull policy, container restart
// policy and restart policy rules, ports, cpu/memory requests and limits,
// exec, tcpSocket, httpGet and grpc probes with their timing fields,
// and lifecycle hooks and stop signal (podspec_extras.go). A
// ConfigMap keeps data, binaryData and immutable; a Secret data (base64),
// stringData (merged into data, winning), type and immutable. Secret
// values never appear in an Issue.
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
