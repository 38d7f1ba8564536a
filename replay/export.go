package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/verify"
)

// The export format (JSON Lines), one event per line:
//
//	{"seq":N,"prev_hash":"<hex>","hash":"<hex>","body":{...}}
//
// body is the stored canonical body embedded verbatim, so the line holds
// the exact hashed bytes (the CLI writes a C1 control in it as \u00XX, the
// same value: see invocation.JSONOut). A checker recomputes them as
// events.Canonical(body): canonical JSON is a fixed point of Canonical, so
// the original bytes come back even if a tool re-indented or re-ordered
// the line, and any change of a value changes them. Then hash must equal
// events.ChainHash(seq, prev_hash, those bytes), and each prev_hash the
// previous line's hash: a contiguous slice chains from its first prev_hash
// (the genesis when it starts at seq 1).

//
// Before the events, an export may carry the signed checkpoints it covers,
// one line each, and, when it starts after seq 1, the Merkle tree before
// its first event (the hashes of the tree's maximal complete subtrees,
// largest first), from which the checkpoints' roots are recomputed:
//
//	{"tree":{"size":N,"frontier":["<base64>",...]}}
//	{"checkpoint":"<signed note>"}
//	{"cosignature":"<a witness's cosignature, as a signed note>"}
//	{"consistency":{"from":B,"to":N,"proof":["<base64>",...]}}
//
// An export that ends before the newest checkpoint the ledger holds (one
// cut with --until) carries that checkpoint and the smallest one after its
// end, each with a consistency proof (RFC 6962) from the tree of its
// first B events (B: its last seq) to the checkpoint's tree: with the
// tree line and the events, the checker computes the root at B and checks
// the proof against the checkpoint's root, which proves that the events
// are exactly those positions of the log the checkpoint signs.
//
// None is trusted: a checkpoint counts only when its signature verifies
// with a key the checker was given, a cosignature only when it verifies
// with a witness key the checker was given, and a wrong frontier makes
// the roots disagree.

// WriteTreeLine writes the tree line of an export that starts after seq size.
func WriteTreeLine(w io.Writer, size int64, frontier []tlog.Hash) error {
	if frontier == nil {
		frontier = []tlog.Hash{}
	}
	return WriteLine(w, "tree", exportTree{Size: size, Frontier: frontier})
}

// WriteCheckpointLine writes a checkpoint line.
func WriteCheckpointLine(w io.Writer, signedNote []byte) error {
	return WriteLine(w, "checkpoint", string(signedNote))
}

// WriteCosignatureLine writes a cosignature line.
func WriteCosignatureLine(w io.Writer, cosigned []byte) error {
	return WriteLine(w, "cosignature", string(cosigned))
}

// WriteConsistencyLine writes a consistency proof line: the tree of the
// first from events is a prefix of the tree of the first to.
func WriteConsistencyLine(w io.Writer, from, to int64, proof tlog.TreeProof) error {
	if proof == nil {
		proof = tlog.TreeProof{}
	}
	return WriteLine(w, "consistency", exportProof{From: from, To: to, Proof: proof})
}

// WriteLine writes one JSON line of one key, {key: v}: a header line of
// an export, or any line of an evidence bundle.
func WriteLine(w io.Writer, key string, v any) error {
	b, err := json.Marshal(map[string]any{key: v})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

type exportProof struct {
	From  int64          `json:"from"`
	To    int64          `json:"to"`
	Proof tlog.TreeProof `json:"proof"`
}

type exportTree struct {
	Size     int64       `json:"size"`
	Frontier []tlog.Hash `json:"frontier"`
}

// header is a line before (or, in a stream, among) the events: a tree, a
// checkpoint, a cosignature or a consistency proof.
type header struct {
	tree     *exportTree
	note     []byte
	cosigned bool // note is a cosignature
	proof    *exportProof
}

// headerLine reads a header line (ok false for any other line).
func headerLine(line []byte) (header, bool) {
	if !bytes.Contains(line, []byte(`"tree"`)) && !bytes.Contains(line, []byte(`"checkpoint"`)) &&
		!bytes.Contains(line, []byte(`"cosignature"`)) && !bytes.Contains(line, []byte(`"consistency"`)) {
		return header{}, false
	}
	var h struct {
		Seq         *int64       `json:"seq"`
		Tree        *exportTree  `json:"tree"`
		Checkpoint  *string      `json:"checkpoint"`
		Cosignature *string      `json:"cosignature"`
		Consistency *exportProof `json:"consistency"`
	}
	if json.Unmarshal(line, &h) != nil || h.Seq != nil {
		return header{}, false
	}
	n := 0
	for _, set := range []bool{h.Tree != nil, h.Checkpoint != nil, h.Cosignature != nil, h.Consistency != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return header{}, false
	case h.Tree != nil:
		return header{tree: h.Tree}, true
	case h.Checkpoint != nil:
		return header{note: []byte(*h.Checkpoint)}, true
	case h.Cosignature != nil:
		return header{note: []byte(*h.Cosignature), cosigned: true}, true
	}
	return header{proof: h.Consistency}, true
}

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
	// Leaf is the event's Merkle leaf hash, which a stream (export
	// --follow) adds: when present, it must be the body's.
	Leaf *string `json:"leaf"`
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
//
// The checkpoints the file carries, and those of opts, are checked as
// VerifyLedger checks them; carried ones only with verifier keys.
func VerifyFile(r io.Reader, source, prevHash string, opts ...VerifyOption) (*verify.Report, error) {
	defer relaxGC(verifyGCPercent)()
	fc := NewFileCheck(source, prevHash, opts...)
	n, err := ScanLines(r, func(n int64, line []byte) error {
		fc.Line(n, line)
		return nil
	})
	if errors.Is(err, ErrLineTooLong) {
		return nil, fmt.Errorf("%s: %w", source, err)
	} else if err != nil {
		return nil, err
	}
	return fc.Finish(n), nil
}

// FileCheck is VerifyFile one line at a time, for a reader of a file that
// holds an export's lines among lines of its own (an evidence bundle).
type FileCheck struct {
	c                   *checker
	cfg                 verifyConfig
	source              string
	lines               int64 // event lines
	carried, carriedCos []NoteSource
	tree                *exportTree
	proofs              []lineProof
	seen                map[string]bool // checkpoint notes read: a stream repeats one when no newer is signed
	started             bool
}

// NewFileCheck starts the check VerifyFile makes.
func NewFileCheck(source, prevHash string, opts ...VerifyOption) *FileCheck {
	cfg := newVerifyConfig(opts)
	return &FileCheck{c: newChecker(source, prevHash, false, cfg), cfg: cfg, source: source, seen: map[string]bool{}}
}

// startTree runs at the first event line: the checkpoints and proofs
// carried before it are known.
func (f *FileCheck) startTree() {
	if f.started {
		return
	}
	f.started = true
	c, cfg := f.c, f.cfg
	if len(f.carried) > 0 || len(f.carriedCos) > 0 {
		t := Trust{}
		if cfg.trust != nil {
			t = *cfg.trust
		}
		t.Checkpoints = append(f.carried, t.Checkpoints...)
		t.Cosignatures = append(f.carriedCos, t.Cosignatures...)
		cfg.trust = &t
	}
	c.tree = newTreeCheck(c.report, false, cfg)
	if f.tree != nil {
		if err := c.tree.startAt(f.tree.Size, f.tree.Frontier); err != nil {
			c.report.Add(verify.Problem{Kind: verify.KindMalformed, Detail: "the tree line: " + err.Error()})
		}
	}
	for _, p := range f.proofs {
		c.tree.addProof(p.proof, p.line)
	}
}

// Line checks line n (not blank) of the file. It returns the event the
// line holds, nil for any other line.
func (f *FileCheck) Line(n int64, line []byte) *Row {
	c := f.c
	if h, ok := headerLine(line); ok {
		t, note, cosigned := h.tree, h.note, h.cosigned
		repeated := note != nil && !cosigned && f.seen[string(note)]
		if note != nil && !cosigned {
			f.seen[string(note)] = true
		}
		switch {
		case h.proof != nil && f.started:
			c.tree.addProof(h.proof, n)
		case h.proof != nil:
			f.proofs = append(f.proofs, lineProof{h.proof, n})
		case f.started && t != nil:
			if p := c.tree.lateTree(n, t); p != nil {
				c.report.Add(*p)
			}
		case f.started && repeated:
		case f.started && !cosigned:
			c.tree.lateNote(NoteSource{Source: fmt.Sprintf("checkpoint %s line %d (carried by the stream)", f.source, n), Note: note, Carried: true})
		case f.started:
			c.report.Add(verify.Problem{Seq: c.report.LastSeq + 1, Line: n, Kind: verify.KindMalformed,
				Detail: "a cosignature line after the events: they must come first"})
		case t != nil && f.tree != nil:
			c.report.Add(verify.Problem{Line: n, Kind: verify.KindMalformed, Detail: "a second tree line"})
		case t != nil:
			f.tree = t
		case cosigned:
			f.carriedCos = append(f.carriedCos, NoteSource{Source: fmt.Sprintf("cosignature %s line %d (carried by the export)", f.source, n), Note: note, Carried: true})
		default:
			f.carried = append(f.carried, NoteSource{Source: fmt.Sprintf("checkpoint %s line %d (carried by the export)", f.source, n), Note: note, Carried: true})
		}
		return nil
	}
	f.startTree()
	f.lines++
	row, err := ParseExportLine(line)
	if err != nil {
		// Named by the seq it presumably held: the one after the last row read.
		c.malformed(verify.Problem{Seq: c.report.LastSeq + 1, Line: n, Kind: verify.KindMalformed, Detail: err.Error()})
		return nil
	}
	row.Line = n
	first := c.report.Events == 0
	c.row(row)
	if first {
		c.tree.checkGenesis(row.Seq, row.PrevHash)
	}
	return row
}

// Finish ends the check of a file of n lines (blank ones too) and
// returns its finished report.
func (f *FileCheck) Finish(n int64) *verify.Report {
	c := f.c
	f.startTree()
	if f.lines == 0 {
		what := "the file is empty"
		switch {
		case f.tree != nil || len(f.carried) > 0:
			what = "the file holds only tree and checkpoint lines"
		case n > 0:
			what = fmt.Sprintf("the file holds only blank lines (%d)", n)
		}
		c.report.Add(verify.Problem{Kind: verify.KindEmpty, Detail: what + ": an export holds at least one event"})
	}
	c.finish()
	c.report.Finish()
	return c.report
}

// ParseExportLine reads an event line of an export (or an archive, or an
// evidence bundle): its body is made canonical again, so that it hashes as
// stored.
func ParseExportLine(line []byte) (*Row, error) {
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
	if el.Leaf != nil {
		if want := checkpoint.LeafHash(body).String(); *el.Leaf != want {
			return nil, fmt.Errorf("leaf %q is not the Merkle leaf hash of the body (%s)", *el.Leaf, want)
		}
	}
	return &Row{Seq: *el.Seq, PrevHash: *el.PrevHash, Hash: *el.Hash, Body: body}, nil
}
