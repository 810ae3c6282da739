//go:build !linux

package cgroups

func statfsCgroup(string) bool { return false }
