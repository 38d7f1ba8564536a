package timelinecmd

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lockledger/lockledger/cli/eventfmt"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
)

// narrowWidth is the width the timeline's table fits by default.
const narrowWidth = 120

// Column indexes of the timeline table, and what the narrow table may
// shorten.
const (
	colSeq = iota
	colTime
	colEvent
	colLock
	colActor
	colOSUser
	colPIDHost
	colRequest
	colDetails
)

// shrinkable are the columns the narrow table cuts (with an ellipsis) when
// the row leaves DETAILS too little room, widest first, down to shrinkFloor.
var shrinkable = []int{colLock, colActor, colOSUser, colPIDHost}

const (
	shrinkFloor = 8
	// detailsWanted is the room DETAILS is given by cutting the other
	// columns; below detailsMin, it goes on lines of its own.
	detailsWanted = 40
	detailsMin    = 30
	detailsIndent = 4
)

// narrowSink prints the timeline table within narrowWidth columns: request
// and host ids shortened, long lock names, actors and users cut with an
// ellipsis when DETAILS would have too little room, and DETAILS wrapped
// between words onto lines of their own, indented under it. Like table,
// it aligns chunks of rows, never narrowing a column once printed.
type narrowSink struct{ t *eventfmt.Table }

func newNarrowSink(w io.Writer, color bool) *narrowSink {
	t := eventfmt.NewTable(w, color, eventfmt.EventHeader...)
	t.Layout = func(widths []int) func(*strings.Builder, []eventfmt.Cell) {
		w, room := layout(widths)
		return func(b *strings.Builder, cells []eventfmt.Cell) { line(b, color, w, room, cells) }
	}
	return &narrowSink{t: t}
}

func (s *narrowSink) Event(ev *replay.Event) error {
	cells := eventfmt.EventCells(ev)
	for i := range cells {
		cells[i].Text = termtext.Escape(cells[i].Text)
	}
	cells[colPIDHost].Text = fmt.Sprintf("%d@%s", ev.PID, shortHost(ev.HostID))
	cells[colRequest].Text = shortRequestID(ev.RequestID)
	cells[colDetails].Text = termtext.Escape(shortenIDsIn(eventfmt.Details(ev)))
	return s.t.Escaped(cells)
}

func (s *narrowSink) Close() error { return s.t.Flush() }

// layout is the printed width of each column but DETAILS, given their
// natural widths, and DETAILS' room on a row's line (0: it goes on lines
// of its own). The columns are cut only as far as it takes to give DETAILS
// detailsWanted, else detailsMin; failing both, DETAILS goes below the
// row, and the columns are cut only as far as the row needs to fit.
func layout(widths []int) ([]int, int) {
	room := func(w []int) int {
		used := 0
		for i := range colDetails {
			used += w[i] + 2
		}
		return narrowWidth - used
	}
	shrink := func(target int) []int {
		w := append([]int(nil), widths...)
		for room(w) < target {
			widest := -1
			for _, i := range shrinkable {
				if w[i] > shrinkFloor && (widest < 0 || w[i] > w[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				break
			}
			w[widest]--
		}
		return w
	}
	for _, want := range []int{detailsWanted, detailsMin} {
		if w := shrink(want); room(w) >= want {
			return w, room(w)
		}
	}
	// The row's last two columns of space are not printed.
	return shrink(-2), 0
}

func line(b *strings.Builder, color bool, w []int, room int, cells []eventfmt.Cell) {
	var row strings.Builder
	for i, c := range cells[:colDetails] {
		text := clipText(c.Text, w[i])
		pad := strings.Repeat(" ", w[i]-utf8.RuneCountInString(text)+2)
		if color && c.Color != "" {
			row.WriteString(c.Color + text + eventfmt.AnsiReset + pad)
		} else {
			row.WriteString(text + pad)
		}
	}
	indent := narrowWidth - room
	if room == 0 {
		indent, room = detailsIndent, narrowWidth-detailsIndent
	}
	lines := eventfmt.Wrap(cells[colDetails].Text, room)
	if c := cells[colDetails].Color; color && c != "" {
		for i, l := range lines {
			lines[i] = c + l + eventfmt.AnsiReset
		}
	}
	if len(lines) > 0 && indent != detailsIndent {
		row.WriteString(lines[0])
		lines = lines[1:]
	}
	b.WriteString(strings.TrimRight(row.String(), " "))
	b.WriteByte('\n')
	for _, l := range lines {
		b.WriteString(strings.Repeat(" ", indent) + l + "\n")
	}
}

// clipText cuts escaped text to n characters, the last an ellipsis. A cut
// inside an escape (\x1b) leaves only backslash sequences, never a
// control character.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// generatedRequestID is the form events.NewRequestID gives: req_ and a
// ULID; compiled on first use, not in every process's start.
var generatedRequestID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`req_[0-9A-HJKMNP-TV-Z]{26}`) })

// shortRequestID is a request id as the narrow table shows it: a
// generated one as req_… and its last six characters (the ULID's random
// end), another one longer than 14 characters as its start, … and its end.
func shortRequestID(id string) string {
	if generatedRequestID().MatchString(id) && len(id) == 30 {
		return "req_…" + id[24:]
	}
	id = termtext.Escape(id)
	if r := []rune(id); len(r) > 14 {
		return string(r[:6]) + "…" + string(r[len(r)-7:])
	}
	return id
}

// shortenIDsIn shortens the generated request ids a detail names (held
// by, from), as the REQUEST column shows them.
func shortenIDsIn(s string) string {
	return generatedRequestID().ReplaceAllStringFunc(s, shortRequestID)
}

// shortHost is a host id cut to 12 characters.
func shortHost(h string) string {
	return clipText(termtext.Escape(h), 12)
}
