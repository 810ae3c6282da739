// Package timeline records where each pod sync spends its time: what
// triggered it (a PLEG event, a store change, a resync, a timer, a probe)
// and when, how long it queued, then each stage the syncer marks (status
// read, plan, executor call with every CRI call the executor made, status
// written). Every stage goes into the syncpod_planner_sync_stage_duration_seconds
// histogram, and the last completed sync of each pod is kept in memory for
// GetPod's last_sync, so a user can see why a pod took the time it took.
//
// It promises: nil *Recorder and nil *Sync are valid and record nothing, so
// the syncer calls them unconditionally; stage names and metric labels are
// a fixed, small set (the CRI operations the executor reports included).
package timeline
