package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/lockledger/lockledger/events"
)

// The export format (JSON Lines), one event per line:
//
//	{"seq":N,"prev_hash":"<hex>","hash":"<hex>","body":{...}}
//
// body is the stored canonical body embedded verbatim, so the line holds
// the exact hashed bytes. A checker recomputes them as
// events.Canonical(body): canonical JSON is a fixed point of Canonical, so
// the original bytes come back even if a tool re-indented or re-ordered
// the line, and any change of a value changes them. Then hash must equal
// events.ChainHash(seq, prev_hash, those bytes), and each prev_hash the
// previous line's hash: a contiguous slice chains from its first prev_hash
// (the genesis when it starts at seq 1).

// WriteExportLine writes one export line for a stored row. A body that is
// not JSON (a damaged row) is written as a JSON string, so that the line
// stays readable and verify --file reports the row instead of the file.
func WriteExportLine(w io.Writer, r *Row) error {
	var buf bytes.Buffer
	buf.Grow(len(r.Body) + 200)
	buf.WriteString(`{"seq":`)
	buf.WriteString(strconv.FormatInt(r.Seq, 10))
	buf.WriteString(`,"prev_hash":`)
	buf.Write(jsonString(r.PrevHash))
	buf.WriteString(`,"hash":`)
	buf.Write(jsonString(r.Hash))
	buf.WriteString(`,"body":`)
	switch {
	case json.Valid(r.Body) && bytes.ContainsAny(r.Body, "\r\n"):
		_ = json.Compact(&buf, r.Body) // valid JSON always compacts
	case json.Valid(r.Body):
		buf.Write(r.Body)
	default:
		buf.Write(jsonString(string(r.Body)))
	}
	buf.WriteString("}\n")
	_, err := w.Write(buf.Bytes())
	return err
}

// exportLine is an export line as read back.
type exportLine struct {
	Seq      *int64          `json:"seq"`
	PrevHash *string         `json:"prev_hash"`
	Hash     *string         `json:"hash"`
	Body     json.RawMessage `json:"body"`
}

// MaxExportLine bounds one export line.
const MaxExportLine = 16 << 20

// ErrLineTooLong: an export line is longer than MaxExportLine.
var ErrLineTooLong = errors.New("export line too long")

// VerifyFile checks a JSON Lines export on its own, without the database:
// the chain from the first line's prev_hash, seq contiguity and every body
// against its schema and the checks of each event on its own (see
// VerifyLedger). prevHash, when not empty, is what the first line must
// chain from (the ledger's genesis for an export from seq 1, or the head
// hash of the previous export). An export that starts at seq 1 is replayed
// as verify replays a ledger (overlaps, inconsistent events, release
// tokens; Report.Replayed): nothing comes before seq 1, so the fold starts
// from the right state whichever genesis the file chains from. A file
// without a single line (empty, or only blank lines) fails as KindEmpty.
// The returned report is finished.
func VerifyFile(r io.Reader, source, prevHash string, opts ...VerifyOption) (*Report, error) {
	defer relaxGC()()
	c := newChecker(source, prevHash, false, newVerifyConfig(opts))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxExportLine)
	var n, lines int64
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		lines++
		row, err := parseExportLine(line)
		if err != nil {
			// Named by the seq it presumably held: the one after the last row read.
			c.malformed(Problem{Seq: c.report.LastSeq + 1, Line: n, Kind: KindMalformed, Detail: err.Error()})
			continue
		}
		row.Line = n
		c.row(row)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: line %d: %w (over %d bytes)", source, n+1, ErrLineTooLong, MaxExportLine)
		}
		return nil, err
	}
	if lines == 0 {
		what := "the file is empty"
		if n > 0 {
			what = fmt.Sprintf("the file holds only blank lines (%d)", n)
		}
		c.report.Add(Problem{Kind: KindEmpty, Detail: what + ": an export holds at least one event"})
	}
	c.finish()
	c.report.Finish()
	return c.report, nil
}

func parseExportLine(line []byte) (*Row, error) {
	var el exportLine
	if err := json.Unmarshal(line, &el); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if el.Seq == nil || el.PrevHash == nil || el.Hash == nil || len(el.Body) == 0 {
		return nil, errors.New(`not an export line: needs "seq", "prev_hash", "hash" and "body"`)
	}
	body, err := events.Canonical(el.Body)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	return &Row{Seq: *el.Seq, PrevHash: *el.PrevHash, Hash: *el.Hash, Body: body}, nil
}
