package cli

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/lockledger/lockledger/internal/termtext"
)

// table prints aligned columns while streaming: it buffers a chunk of rows,
// widens the columns to fit them (never narrowing), and prints. Colour is
// applied after padding so that escape codes never skew the alignment.
type table struct {
	w       io.Writer
	color   bool
	header  []string
	widths  []int
	pending [][]cell
	started bool
}

type cell struct {
	text  string
	color string // ANSI sequence, used only when the table is coloured
}

// tableChunk is how many rows are aligned together before printing.
const tableChunk = 256

func newTable(w io.Writer, color bool, header ...string) *table {
	t := &table{w: w, color: color, header: header, widths: make([]int, len(header))}
	for i, h := range header {
		t.widths[i] = utf8.RuneCountInString(h)
	}
	return t
}

// row queues one line; its cells' text is escaped (termtext), so a field
// another user chose can neither add a line nor drive the terminal.
func (t *table) row(cells ...cell) error {
	for i := range cells {
		cells[i].text = termtext.Escape(cells[i].text)
	}
	t.pending = append(t.pending, cells)
	if len(t.pending) >= tableChunk {
		return t.flush()
	}
	return nil
}

func (t *table) flush() error {
	for _, r := range t.pending {
		for i, c := range r {
			if i < len(t.widths) {
				t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c.text))
			}
		}
	}
	var b strings.Builder
	if !t.started {
		t.started = true
		hc := make([]cell, len(t.header))
		for i, h := range t.header {
			hc[i] = cell{text: h, color: ansiBold}
		}
		t.line(&b, hc)
	}
	for _, r := range t.pending {
		t.line(&b, r)
	}
	t.pending = t.pending[:0]
	_, err := io.WriteString(t.w, b.String())
	return err
}

func (t *table) line(b *strings.Builder, cells []cell) {
	for i, c := range cells {
		text := c.text
		if i < len(cells)-1 {
			text += strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c.text)+2)
		}
		if t.color && c.color != "" {
			trimmed := strings.TrimRight(text, " ")
			b.WriteString(c.color + trimmed + ansiReset + text[len(trimmed):])
		} else {
			b.WriteString(text)
		}
	}
	b.WriteByte('\n')
}
