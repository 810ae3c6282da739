package docref

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the pinned-by lists of "+BehaviourDoc)

// repo loads the repository this test runs in.
func repo(t *testing.T) (root string, files []File, doc []byte) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err = Root(wd)
	if err != nil {
		t.Fatal(err)
	}
	files, err = Files(root)
	if err != nil {
		t.Fatal(err)
	}
	doc, err = os.ReadFile(filepath.Join(root, filepath.FromSlash(BehaviourDoc)))
	if err != nil {
		t.Fatal(err)
	}
	return root, files, doc
}

// TestCitedIDsResolve: every R-id cited anywhere has its anchor.
func TestCitedIDsResolve(t *testing.T) {
	_, files, doc := repo(t)
	ids, _ := Anchors(doc)
	n := 0
	for _, c := range Citations(files) {
		n++
		if !slices.Contains(ids, c.Text) {
			t.Errorf("%s:%d: %s has no anchor in %s", c.Path, c.Line, c.Text, BehaviourDoc)
		}
	}
	if n == 0 {
		t.Fatal("no citation found: the scan is broken")
	}
}

// TestNoOutsideDocuments: nothing refers to documents outside the
// repository; the project's own are under docs/.
func TestNoOutsideDocuments(t *testing.T) {
	_, files, _ := repo(t)
	for _, r := range OutsideRefs(files) {
		t.Errorf("%s: refers to a document outside the repository; cite docs/design.md or %s instead", r, BehaviourDoc)
	}
}

// TestPinnedLists: the pinned-by lists are the ones the tests' citations
// give. Run with -update to rewrite them.
func TestPinnedLists(t *testing.T) {
	root, files, doc := repo(t)
	got, problems := Rewrite(doc, Pinned(Citations(files)))
	for _, p := range problems {
		t.Errorf("%s: %s", BehaviourDoc, p)
	}
	if string(got) == string(doc) {
		return
	}
	if *update && len(problems) == 0 {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(BehaviourDoc)), got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the pinned-by lists of %s", BehaviourDoc)
		return
	}
	t.Errorf("the pinned-by lists of %s are stale (%s): run go test ./internal/docref -update",
		BehaviourDoc, strings.Join(staleLists(doc, got), ", "))
}

// staleLists returns the ids whose pinned-by list differs between two
// versions of the document.
func staleLists(before, after []byte) []string {
	lists := func(doc []byte) map[string]string {
		m := map[string]string{}
		for _, b := range blockRE.FindAllSubmatch(doc, -1) {
			m[string(b[1])] = string(b[2])
		}
		return m
	}
	o, n := lists(before), lists(after)
	var ids []string
	for id, text := range n {
		if o[id] != text {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestCheckFails: the checks catch what they are for, on a small tree.
func TestCheckFails(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.work", "go 1.26.0\n")
	write(BehaviourDoc, `<a id="R-1"></a>
## R-1
<!-- pinned-by R-1 -->
<!-- end pinned-by -->
<a id="R-1.1"></a>
### R-1.1 one step: <a id="R-1.1a"></a>a.
<!-- pinned-by R-1.1 -->
Pinned by: stale.
<!-- end pinned-by -->
<a id="R-1.2"></a>
<a id="R-1.2"></a>
`)
	write("a/a.go", "// R-1.1a and R-1.x resolve; R-1.3 does not. See ../shared/DESIGN.md.\n")
	write("a/a_test.go", "// R-1.1a is pinned here; XR-9 is no citation.\n")
	write("a/testdata/case.txt", "R-1.1 R-1.1\n")
	write(".hidden/x.go", "R-7\n")
	write("bin/x", "R-7\n")
	write(SelfDir+"/x_test.go", "R-7\n")
	write("a/blob.db", "R-7\n")
	write("a/binary", "R-7\x00")

	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	if want := []string{"a/a.go", "a/a_test.go", "a/testdata/case.txt", BehaviourDoc, "go.work"}; !slices.Equal(paths, want) {
		t.Errorf("scanned %q, want %q", paths, want)
	}

	doc := files[3].Data
	ids, _ := Anchors(doc)
	var unresolved []string
	for _, c := range Citations(files) {
		if !slices.Contains(ids, c.Text) {
			unresolved = append(unresolved, c.String())
		}
	}
	if want := []string{"a/a.go:1: R-1.3"}; !slices.Equal(unresolved, want) {
		t.Errorf("unresolved %q, want %q", unresolved, want)
	}

	var outside []string
	for _, r := range OutsideRefs(files) {
		outside = append(outside, r.String())
	}
	if want := []string{"a/a.go:1: ../shared", "a/a.go:1: DESIGN.md"}; !slices.Equal(outside, want) {
		t.Errorf("outside references %q, want %q", outside, want)
	}

	got, problems := Rewrite(doc, Pinned(Citations(files)))
	if want := []string{"anchor R-1.2 is defined more than once", "R-1.2 has an anchor but no pinned-by list"}; !slices.Equal(problems, want) {
		t.Errorf("problems %q, want %q", problems, want)
	}
	wantDoc := strings.Replace(strings.Replace(string(doc),
		"<!-- pinned-by R-1 -->\n", "<!-- pinned-by R-1 -->\nPinned by: no test cites the section as a whole; its rules list theirs.\n", 1),
		"Pinned by: stale.\n", "Pinned by:\n\n- [`a/a_test.go`](../a/a_test.go)\n- [`a/testdata/case.txt`](../a/testdata/case.txt)\n", 1)
	if string(got) != wantDoc {
		t.Errorf("rewritten doc:\n%s\nwant:\n%s", got, wantDoc)
	}
	if again, _ := Rewrite(got, Pinned(Citations(files))); string(again) != string(got) {
		t.Error("a second rewrite changes the doc")
	}

	// A list without its end marker is left alone, not allowed to swallow
	// the text up to the next list's end.
	broken := []byte(strings.Replace(wantDoc, "<!-- end pinned-by -->", "", 1))
	kept, problems := Rewrite(broken, Pinned(Citations(files)))
	if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "has no end marker") }) {
		t.Errorf("a list without its end marker gave problems %q", problems)
	}
	if string(kept) != string(broken) {
		t.Errorf("a list without its end marker was rewritten:\n%s", kept)
	}
}

func TestRule(t *testing.T) {
	for in, want := range map[string]string{
		"R-2": "R-2", "R-2.2": "R-2.2", "R-2.2.1": "R-2.2", "R-2.4a": "R-2.4", "R-13.10": "R-13.10",
	} {
		if got := Rule(in); got != want {
			t.Errorf("Rule(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Normalize("R-14.x"); got != "R-14" {
		t.Errorf("Normalize(R-14.x) = %q", got)
	}
}
