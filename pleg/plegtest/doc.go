// Package plegtest holds the PLEG's test harness: Runtime, an in-memory CRI
// runtime service (the subset of k8s.io/cri-api's RuntimeService the PLEG
// uses) with knobs for failures, hanging inspections and a
// GetContainerEvents stream.
package plegtest
