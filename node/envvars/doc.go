// Package envvars computes the Service environment variables the kubelet
// gives the containers of a pod from the API server: which
// Services count for a pod and the docker-links-style variables
// of each. It is pure: the Services are an argument, and the
// same Services give the same variables whatever their order.
package envvars
