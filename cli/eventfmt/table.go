package eventfmt

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/lockledger/lockledger/internal/termtext"
)

// Table prints aligned columns while streaming: it buffers a chunk of rows,
// widens the columns to fit them (never narrowing), and prints. Colour is
// applied after padding so that escape codes never skew the alignment.
type Table struct {
	w       io.Writer
	color   bool
	header  []string
	widths  []int
	pending [][]Cell
	started bool
	// Layout, when set, lays out each chunk instead of padding every
	// column to its width: given the widths so far, it returns how to
	// write one row (the header's among them).
	Layout func(widths []int) func(b *strings.Builder, cells []Cell)
}

// Cell is one cell of a table row.
type Cell struct {
	Text  string
	Color string // ANSI sequence, used only when the table is coloured
}

// TableChunk is how many rows are aligned together before printing.
const TableChunk = 256

func NewTable(w io.Writer, color bool, header ...string) *Table {
	t := &Table{w: w, color: color, header: header, widths: make([]int, len(header))}
	for i, h := range header {
		t.widths[i] = utf8.RuneCountInString(h)
	}
	return t
}

// Row queues one line; its cells' text is escaped (termtext), so a field
// another user chose can neither add a line nor drive the terminal.
func (t *Table) Row(cells ...Cell) error {
	for i := range cells {
		cells[i].Text = termtext.Escape(cells[i].Text)
	}
	return t.Escaped(cells)
}

// Escaped queues a line whose cells' text is escaped already.
func (t *Table) Escaped(cells []Cell) error {
	t.pending = append(t.pending, cells)
	if len(t.pending) >= TableChunk {
		return t.Flush()
	}
	return nil
}

func (t *Table) Flush() error {
	for _, r := range t.pending {
		for i, c := range r {
			if i < len(t.widths) {
				t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c.Text))
			}
		}
	}
	line := t.line
	if t.Layout != nil {
		line = t.Layout(t.widths)
	}
	var b strings.Builder
	if !t.started {
		t.started = true
		hc := make([]Cell, len(t.header))
		for i, h := range t.header {
			hc[i] = Cell{Text: h, Color: AnsiBold}
		}
		line(&b, hc)
	}
	for _, r := range t.pending {
		line(&b, r)
	}
	t.pending = t.pending[:0]
	_, err := io.WriteString(t.w, b.String())
	return err
}

func (t *Table) line(b *strings.Builder, cells []Cell) {
	for i, c := range cells {
		text := c.Text
		if i < len(cells)-1 {
			text += strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c.Text)+2)
		}
		if t.color && c.Color != "" {
			trimmed := strings.TrimRight(text, " ")
			b.WriteString(c.Color + trimmed + AnsiReset + text[len(trimmed):])
		} else {
			b.WriteString(text)
		}
	}
	b.WriteByte('\n')
}

// Wrap splits s into lines of at most n characters, between words
// where it can; a word longer than a line is cut.
func Wrap(s string, n int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(word) > n {
			if cur != "" {
				lines, cur = append(lines, cur), ""
			}
			r := []rune(word)
			lines, word = append(lines, string(r[:n])), string(r[n:])
		}
		switch {
		case cur == "":
			cur = word
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(word) <= n:
			cur += " " + word
		default:
			lines, cur = append(lines, cur), word
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
