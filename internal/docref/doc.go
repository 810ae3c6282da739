// Package docref keeps the project's references to its own documents true.
//
// Code, tests, test data, protos and docs cite the kubelet behaviours
// syncpod reproduces by a stable id (R-2.1, R-13.3, ...; R-2 for a whole
// section, R-2.2.1 or R-2.4a for one step of a rule, R-2.x for "some rule
// of section 2"). docs/kubelet-behaviour.md defines every id as an HTML
// anchor (<a id="R-2.1"></a>) and, under each section and rule, lists the
// tests that pin it between two marker comments:
//
//	<!-- pinned-by R-2.1 -->
//	...generated list...
//	<!-- end pinned-by -->
//
// The package's test walks the repository (the folder holding go.work)
// and fails when:
//
//   - a cited id has no anchor in docs/kubelet-behaviour.md;
//   - a file refers to a document outside the repository (a relative path
//     out of it, or a design, rule-book or style document by a name the
//     repository does not use); the project's own documents are under
//     docs/;
//   - a "pinned by" list is not the one generated from the test files
//     (*_test.go and everything under a testdata folder) that cite the id,
//     or an anchored section or rule has no list. `go test ./internal/docref
//     -update` rewrites the lists.
//
// The files it reads lie outside its module, where the go command's test
// cache does not look: run it with -count=1 (or -shuffle=on, as make test
// does) to be sure it reads the repository as it is now.
//
// It promises: standard library only; it reads files and writes nothing
// but docs/kubelet-behaviour.md, and that only with -update. Hidden
// folders, bin, dist and this package's own folder (whose tests cite
// wrong ids on purpose) are not scanned, nor are files that are not text.
package docref
