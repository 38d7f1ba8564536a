package eventfmt

import (
	"encoding/csv"
	"io"

	"github.com/lockledger/lockledger/internal/termtext"
)

// CSVWriter writes every CSV that lockledger prints (timeline, history,
// export). A cell that a spreadsheet would read as a formula (it begins
// with = + - @, a tab or a carriage return) is prefixed with a single
// quote, so an actor or a path that another user chose cannot run in the
// auditor's spreadsheet; its control characters are escaped as in every
// text output (termtext), since a CSV is often read on a terminal. JSON
// and JSONL keep the exact values.
type CSVWriter struct{ w *csv.Writer }

func NewCSVWriter(w io.Writer) *CSVWriter { return &CSVWriter{w: csv.NewWriter(w)} }

func (c *CSVWriter) Write(record []string) error {
	cells := make([]string, len(record))
	for i, s := range record {
		cells[i] = csvCell(s)
	}
	return c.w.Write(cells)
}

func (c *CSVWriter) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// csvCell is s as a CSV cell: escaped, and prefixed with ' when it begins
// like a formula.
func csvCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + termtext.Escape(s)
	}
	return termtext.Escape(s)
}
