// Package cliargs parses the command-line values syncpodctl reads itself
// (port pairs, --for conditions, -o formats). A bad value is a
// UsageError, which syncpodctl reports with exit code 2.
//
// It is a leaf with few imports on purpose: its parsers are fuzzed, and a
// fuzz build instruments every package it links.
package cliargs
