package report

import "strings"

// Merge returns doc, the document of this run (Render), with the sections
// of old, the document an earlier run wrote, that doc has none of the
// same title of carried over: the other runtime's tables, the Density and
// Scale sections their own targets write. A section of both is doc's, in
// old's place; doc's sections old has not are put after the last section
// old shares with doc (its Machine section at least), so a run alternating
// with another keeps the order the two first made. doc's text before its
// first section (the title and when it was generated) is kept, old's
// dropped.
func Merge(doc, old string) string {
	head, mine := splitSections(doc)
	_, theirs := splitSections(old)
	byTitle := make(map[string]section, len(mine))
	for _, s := range mine {
		byTitle[s.title] = s
	}
	inOld := make(map[string]bool, len(theirs))
	for _, s := range theirs {
		inOld[s.title] = true
	}
	var out []section
	last := -1 // the index in out of the last section of doc's
	for _, s := range theirs {
		if m, ok := byTitle[s.title]; ok {
			out = append(out, m)
			last = len(out) - 1
			continue
		}
		out = append(out, s)
	}
	var added []section
	for _, s := range mine {
		if !inOld[s.title] {
			added = append(added, s)
		}
	}
	out = append(out[:last+1], append(added, out[last+1:]...)...)
	var b strings.Builder
	b.WriteString(strings.TrimRight(head, "\n") + "\n\n")
	for _, s := range out {
		b.WriteString(strings.TrimRight(s.text, "\n") + "\n\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// section is one "## " section of a document: its title and its text,
// heading included.
type section struct {
	title, text string
}

// splitSections cuts doc at its "## " headings: the text before the first
// and each section.
func splitSections(doc string) (string, []section) {
	var head strings.Builder
	var out []section
	for _, l := range strings.SplitAfter(doc, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimRight(l, "\n"), "## "); ok {
			out = append(out, section{title: t})
		}
		if len(out) == 0 {
			head.WriteString(l)
			continue
		}
		out[len(out)-1].text += l
	}
	return head.String(), out
}
