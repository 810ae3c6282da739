// Package plantest holds what the planner's golden scenarios share: the
// harness that replays a directory of scenario files through
// github.com/cockroachdb/datadriven, and the readers for what a scenario
// writes as text (a pod in YAML, a command's positional words).
//
// A scenario file is a list of commands, each a command line with its
// arguments, optional input lines, a "----" line and the expected output up
// to a blank line; lines starting with "#" between commands are comments.
// `go test -rewrite` (datadriven's flag) rewrites the expected outputs in
// place and keeps everything else; review the diff.
//
// Only tests import this package: the planning packages themselves stay
// free of it.
package plantest
