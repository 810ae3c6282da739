// Package service is the PlegService gRPC adapter: each RPC validates its
// request (InvalidArgument naming every bad field at once) and forwards to
// the PLEG core (package pleg). Errors are mapped to gRPC codes in one
// function, toStatus.
package service
