package buildtags

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for text, want := range map[string]string{
		"":                               "",
		"# only a comment\n":             "",
		"a\n":                            "a",
		"# why\na # trailing\n\n  b  \n": "a,b",
		"a b\nc":                         "a,b,c",
	} {
		if got := Parse(text); got != want {
			t.Errorf("Parse(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestStaticFindsTheFileAbove(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "mk"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, File), []byte("# c\nx\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Static(deep); err != nil || got != "x,y" {
		t.Fatalf("Static = %q, %v; want x,y", got, err)
	}
	if _, err := Static(t.TempDir()); err == nil || !strings.Contains(err.Error(), File) {
		t.Fatalf("Static of a tree without the file: %v, want an error naming %s", err, File)
	}
}

// The repository's own file reads as the Makefile reads it.
func TestStaticAgreesWithTheMakefile(t *testing.T) {
	got, err := Static(".")
	if err != nil {
		t.Fatal(err)
	}
	if got == "" {
		t.Fatalf("%s names no tags", File)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skipf("SKIPPING the comparison with the Makefile: no make: %v", err)
	}
	out, err := exec.Command("make", "-s", "--no-print-directory", "-C", "../..",
		"--eval", "print-static-tags: ; @echo '$(STATIC_TAGS)'", "print-static-tags").CombinedOutput()
	if err != nil {
		t.Fatalf("make print-static-tags: %v\n%s", err, out)
	}
	if v := strings.TrimSpace(string(out)); v != got {
		t.Errorf("the Makefile's STATIC_TAGS is %q, Static reads %q", v, got)
	}
}
