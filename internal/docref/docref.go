package docref

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// BehaviourDoc is the document that defines every rule id, relative to the
// repository root.
const BehaviourDoc = "docs/kubelet-behaviour.md"

// SelfDir is this package's folder, relative to the repository root. It is
// not scanned: its tests hold wrong ids and outside names on purpose.
const SelfDir = "internal/docref"

// OutsideNames are the strings a file must not contain: a relative path
// out of the repository and the names of documents that live outside it.
// The project's own documents are docs/design.md and
// docs/kubelet-behaviour.md.
var OutsideNames = []string{
	"../shared",
	"KUBELET-RULES",
	"KUBELET-PEER",
	"CONFORMANCE.md",
	"DESIGN.md",
	"STYLE.md",
}

var (
	// citeRE matches a cited id: R-<section>, R-<section>.<rule>, deeper
	// steps (R-2.2.1, R-2.4a) and R-<section>.x.
	citeRE   = regexp.MustCompile(`\bR-[0-9]+(?:\.[0-9]+)*(?:\.x|[a-z])?\b`)
	anchorRE = regexp.MustCompile(`<a id="(R-[^"]*)"></a>`)
	// ruleRE is the part of an id a "pinned by" list belongs to.
	ruleRE  = regexp.MustCompile(`^R-[0-9]+(?:\.[0-9]+)?`)
	blockRE = regexp.MustCompile(`(?s)<!-- pinned-by (\S+) -->\n(.*?)<!-- end pinned-by -->`)
)

// File is one scanned file: its slash-separated path from the repository
// root and its content.
type File struct {
	Path string
	Data []byte
}

// Finding is one occurrence of a string in a file, at a 1-based line.
type Finding struct {
	Path string
	Line int
	Text string
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d: %s", f.Path, f.Line, f.Text) }

// Root returns the repository root: dir or the nearest folder above it
// that holds go.work.
func Root(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work in %s or any folder above it", dir)
		}
		dir = parent
	}
}

// skipDir reports whether a folder (slash path from the root, and its
// name) is left out of the scan.
func skipDir(rel, name string) bool {
	if rel == "." {
		return false
	}
	return strings.HasPrefix(name, ".") || name == "bin" || name == "dist" ||
		name == "node_modules" || rel == SelfDir
}

// skipFile reports whether a file is left out by its name: the build and
// run outputs .gitignore names.
func skipFile(name string) bool {
	for _, suffix := range []string{".db", ".test", ".out", ".prof"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return name == "coverage.txt"
}

// Files reads every text file under root that the scan covers, in path
// order.
func Files(root string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || skipFile(d.Name()) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data, 0) >= 0 {
			return nil // not text
		}
		files = append(files, File{Path: rel, Data: data})
		return nil
	})
	return files, err
}

// IsTest reports whether a file pins behaviour: a Go test file or a file
// under a testdata folder.
func IsTest(p string) bool {
	return strings.HasSuffix(p, "_test.go") || slices.Contains(strings.Split(path.Dir(p), "/"), "testdata")
}

// Normalize turns a cited token into the id it refers to: R-2.x is
// section R-2; any other token is its own id.
func Normalize(token string) string {
	return strings.TrimSuffix(token, ".x")
}

// Rule returns the id whose "pinned by" list a citation of id counts
// towards: the section or rule it is, or is a step of.
func Rule(id string) string {
	return ruleRE.FindString(id)
}

// Citations returns every cited id in files (normalised), in file and
// line order.
func Citations(files []File) []Finding {
	var out []Finding
	for _, f := range files {
		if !bytes.Contains(f.Data, []byte("R-")) {
			continue
		}
		for i, line := range bytes.Split(f.Data, []byte("\n")) {
			if !bytes.Contains(line, []byte("R-")) {
				continue
			}
			for _, m := range citeRE.FindAll(line, -1) {
				out = append(out, Finding{Path: f.Path, Line: i + 1, Text: Normalize(string(m))})
			}
		}
	}
	return out
}

// OutsideRefs returns every occurrence of one of OutsideNames in files.
func OutsideRefs(files []File) []Finding {
	var out []Finding
	for _, f := range files {
		if !slices.ContainsFunc(OutsideNames, func(name string) bool { return bytes.Contains(f.Data, []byte(name)) }) {
			continue
		}
		for i, line := range bytes.Split(f.Data, []byte("\n")) {
			for _, name := range OutsideNames {
				if bytes.Contains(line, []byte(name)) {
					out = append(out, Finding{Path: f.Path, Line: i + 1, Text: name})
				}
			}
		}
	}
	return out
}

// Anchors returns the ids doc defines, in order of appearance, and the ids
// it defines more than once.
func Anchors(doc []byte) (ids, dups []string) {
	seen := map[string]bool{}
	for _, m := range anchorRE.FindAllSubmatch(doc, -1) {
		id := string(m[1])
		if seen[id] {
			dups = append(dups, id)
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids, dups
}

// Pinned returns, for every rule or section id, the sorted test files
// that cite it or one of its steps.
func Pinned(citations []Finding) map[string][]string {
	out := map[string][]string{}
	for _, c := range citations {
		if !IsTest(c.Path) {
			continue
		}
		r := Rule(c.Text)
		if !slices.Contains(out[r], c.Path) {
			out[r] = append(out[r], c.Path)
		}
	}
	for _, paths := range out {
		slices.Sort(paths)
	}
	return out
}

// PinnedList is the text of a "pinned by" list as it stands between the
// markers: a line per test file, linked relative to docs/. hasRules says
// the list is a section's that has rules of its own.
func PinnedList(paths []string, hasRules bool) string {
	switch {
	case len(paths) == 0 && hasRules:
		return "Pinned by: no test cites the section as a whole; its rules list theirs.\n"
	case len(paths) == 0:
		return "Pinned by: no test cites this id.\n"
	}
	var b strings.Builder
	b.WriteString("Pinned by:\n\n")
	for _, p := range paths {
		fmt.Fprintf(&b, "- [`%s`](../%s)\n", p, p)
	}
	return b.String()
}

// Rewrite returns doc with every "pinned by" list regenerated from pinned.
// It also returns the problems of the document's structure: a list whose
// id has no anchor, an id listed twice, and an anchored section or rule
// (R-n, R-n.m) with no list.
func Rewrite(doc []byte, pinned map[string][]string) ([]byte, []string) {
	ids, dups := Anchors(doc)
	var problems []string
	for _, id := range dups {
		problems = append(problems, fmt.Sprintf("anchor %s is defined more than once", id))
	}
	listed := map[string]bool{}
	out := blockRE.ReplaceAllFunc(doc, func(block []byte) []byte {
		m := blockRE.FindSubmatch(block)
		id := string(m[1])
		if bytes.Contains(m[2], []byte("<!-- pinned-by ")) {
			// An earlier list lacks its end marker: rewriting would eat
			// the text up to the next list's end.
			problems = append(problems, fmt.Sprintf("pinned-by list of %s has no end marker before the next list", id))
			return block
		}
		if listed[id] {
			problems = append(problems, fmt.Sprintf("pinned-by list of %s appears more than once", id))
		}
		listed[id] = true
		if !slices.Contains(ids, id) {
			problems = append(problems, fmt.Sprintf("pinned-by list of %s has no anchor", id))
		}
		hasRules := slices.ContainsFunc(ids, func(r string) bool { return Rule(r) == r && strings.HasPrefix(r, id+".") })
		return fmt.Appendf(nil, "<!-- pinned-by %s -->\n%s<!-- end pinned-by -->", id, PinnedList(pinned[id], hasRules))
	})
	for _, id := range ids {
		if Rule(id) == id && !listed[id] {
			problems = append(problems, fmt.Sprintf("%s has an anchor but no pinned-by list", id))
		}
	}
	return out, problems
}
