// Package crilabels names the labels and annotations syncpod puts on CRI
// sandboxes and containers. It is the contract between the executor, which
// writes them, and the PLEG, which reads them back into an ObservedPod; the
// pod identity labels reuse the kubelet's keys so crictl shows syncpod pods
// as it shows kubelet pods.
package crilabels
