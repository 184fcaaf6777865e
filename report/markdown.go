package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/iopath/iopath/bench"
)

// Markdown writes r as a GitHub-flavoured markdown document: the header
// as a list, one table per workload with the same columns and labels as
// Table (fio rows under the iopath rows they mirror, marked ↳), the
// legend in a collapsed <details> block and the notes as a list. Text from
// the report is escaped, so a | or * in an error message stays literal.
func Markdown(w io.Writer, r *bench.Report) error {
	var b bytes.Buffer
	v := newView(r)

	b.WriteString("# iopath bench\n\n")
	for _, f := range headerFields(r, v) {
		var value string
		switch f.label {
		case "workload": // each table has its heading
			continue
		case "file":
			value = mdCode(r.File.Path) + " (" + mdEscape(fileExtra(r.File)) + ")"
		case "command":
			value = mdCode(r.Command)
		case "fio":
			value = mdEscape(r.Fio.Version)
			if r.Fio.Path != "" {
				value = strings.TrimSpace(value + " (" + mdCode(r.Fio.Path) + ")")
			}
		default:
			value = mdEscape(f.value)
		}
		fmt.Fprintf(&b, "- **%s:** %s\n", f.label, value)
	}

	if len(r.Results) == 0 {
		b.WriteString("\nNo results.\n")
	}
	for _, g := range v.groups {
		heading := g.heading
		if heading == "" {
			heading = "results"
		}
		fmt.Fprintf(&b, "\n### %s\n\n", mdEscape(heading))
		heads := make([]string, len(v.cols))
		aligns := make([]string, len(v.cols))
		for i, c := range v.cols {
			heads[i] = c.head
			if c.md != "" {
				heads[i] = c.md
			}
			aligns[i] = ":---"
			if c.right {
				aligns[i] = "---:"
			}
		}
		mdRow(&b, heads, true)
		mdRow(&b, aligns, false)
		for _, row := range g.rows {
			cells := v.cells(row, false)
			if row.under {
				cells[0] = "↳ " + cells[0]
			}
			for i := range cells {
				cells[i] = mdEscape(cells[i])
			}
			if row.res.Error != "" {
				// "error" (or "not run") under GiB/s, the message in
				// the left-aligned column after it.
				what := "**error**"
				if notRun(row.res) {
					what = "**not run**"
				}
				cells = append(cells, what, mdEscape(oneLine(row.res.Error)))
				for len(cells) < len(v.cols) {
					cells = append(cells, "")
				}
			}
			mdRow(&b, cells, false)
		}
	}

	if len(r.Results) > 0 {
		b.WriteString("\n<details>\n<summary>What the columns mean</summary>\n\n")
		for _, e := range v.legend() {
			fmt.Fprintf(&b, "- %s: %s\n", mdCode(e.term), mdEscape(e.text))
		}
		b.WriteString("\n</details>\n")
	}

	if notes := reportNotes(r, v); len(notes) > 0 {
		b.WriteString("\n### Notes\n\n")
		for _, n := range notes {
			b.WriteString("- " + mdEscape(n) + "\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// mdRow writes one table row; with escape the cells are escaped first.
func mdRow(b *bytes.Buffer, cells []string, escape bool) {
	b.WriteString("|")
	for _, c := range cells {
		if escape {
			c = mdEscape(c)
		}
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}

// mdEscape makes s literal markdown text on one line: the characters that
// could start markup are backslash-escaped (| too, which would end a table
// cell), except _ inside a word, which GitHub leaves alone (io_uring).
func mdEscape(s string) string {
	s = oneLine(s)
	rs := []rune(s)
	var b strings.Builder
	word := func(i int) bool {
		return i >= 0 && i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]))
	}
	for i, r := range rs {
		switch r {
		case '\\', '|', '*', '`', '[', ']', '<', '>', '~', '#', '&', '!':
			b.WriteByte('\\')
		case '_':
			if !word(i-1) || !word(i+1) {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCode makes s an inline code span, with a fence longer than any run of
// backticks in it. Inside a table a | would still need escaping; code
// spans are used outside tables only.
func mdCode(s string) string {
	s = oneLine(s)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
