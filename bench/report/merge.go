package report

import "strings"

// Merge returns doc, the document of this run (Render), with the sections
// of old, the document an earlier run wrote, that doc has none of the
// same title of carried over: the other runtime's tables, the Density and
// Scale sections their own targets write. A section of both is doc's, in
// old's place; a section of doc's that old has not goes right after the
// one it follows in doc (the Machine section at least), so runs
// alternating between runtimes keep the order the first two made. doc's
// text before its first section (the title and when it was generated) is
// kept, old's dropped.
func Merge(doc, old string) string {
	head, mine := splitSections(doc)
	_, theirs := splitSections(old)
	byTitle := make(map[string]section, len(mine))
	for _, s := range mine {
		byTitle[s.title] = s
	}
	out := make([]section, 0, len(theirs)+len(mine))
	for _, s := range theirs {
		if m, ok := byTitle[s.title]; ok {
			s = m
		}
		out = append(out, s)
	}
	at := func(title string) int {
		for i, s := range out {
			if s.title == title {
				return i
			}
		}
		return -1
	}
	for i, s := range mine {
		if at(s.title) >= 0 {
			continue
		}
		j := 0 // after the section s follows in doc, or first
		if i > 0 {
			j = at(mine[i-1].title) + 1
		}
		out = append(out[:j], append([]section{s}, out[j:]...)...)
	}
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
