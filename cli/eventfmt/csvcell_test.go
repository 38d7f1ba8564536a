package eventfmt

import (
	"bytes"
	"encoding/csv"
	"testing"
)

func TestCSVCellQuotesWhatASpreadsheetRuns(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"alice", "alice"},
		{"a=b", "a=b"},
		{"=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"},
		{"+SUM(1+1)", "'+SUM(1+1)"},
		{"-2+3", "'-2+3"},
		{"@HYPERLINK(\"x\")", "'@HYPERLINK(\"x\")"},
		{"\t=1", `'\t=1`},
		{"\r=1", `'\r=1`},
		{"=1\n+2", `'=1\n+2`},
		{"a\x1b[2J", `a\x1b[2J`},
		{"'=already", "'=already"},
	} {
		if got := csvCell(c.in); got != c.want {
			t.Errorf("csvCell(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var b bytes.Buffer
	w := NewCSVWriter(&b)
	if err := w.Write([]string{"=1+1", "x,y", "line\nbreak"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 1 || rows[0][0] != "'=1+1" || rows[0][1] != "x,y" || rows[0][2] != `line\nbreak` {
		t.Errorf("written %q, read back %q (%v)", b.String(), rows, err)
	}
}
