package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// RootMismatchError: the stored tree does not hash to a checkpoint's root
// at its size, so nothing can be proven against it.
type RootMismatchError struct {
	Size       int64
	Have, Want tlog.Hash
}

func (e *RootMismatchError) Error() string {
	return fmt.Sprintf("the ledger's first %d events hash to %s, not to the checkpoint's root %s", e.Size, e.Have, e.Want)
}

// ErrTooSmall: a proof asked of a tree that does not hold the record or
// the size.
var ErrTooSmall = errors.New("beyond the tree")

// matchRoot checks that r's tree of c.Size records hashes to c.Root.
func matchRoot(c Checkpoint, r tlog.HashReader) error {
	h, err := tlog.TreeHash(c.Size, r)
	if err != nil {
		return err
	}
	if h != c.Root {
		return &RootMismatchError{Size: c.Size, Have: h, Want: c.Root}
	}
	return nil
}

// ProveInclusion proves that event seq is in the tree of checkpoint c,
// read through r (the stored hashes), after checking that r's tree is c's.
func ProveInclusion(seq int64, c Checkpoint, r tlog.HashReader) (tlog.RecordProof, error) {
	if seq < 1 || seq > c.Size {
		return nil, fmt.Errorf("seq %d: %w of checkpoint size %d", seq, ErrTooSmall, c.Size)
	}
	if err := matchRoot(c, r); err != nil {
		return nil, err
	}
	return tlog.ProveRecord(c.Size, Index(seq), r)
}

// ProveConsistency proves that the tree of newer extends that of older,
// read through r, after checking that r's tree is both.
func ProveConsistency(older, newer Checkpoint, r tlog.HashReader) (tlog.TreeProof, error) {
	if older.Size > newer.Size {
		return nil, fmt.Errorf("the older checkpoint (size %d) is larger than the newer (size %d)", older.Size, newer.Size)
	}
	if err := matchRoot(older, r); err != nil {
		return nil, err
	}
	if err := matchRoot(newer, r); err != nil {
		return nil, err
	}
	return tlog.ProveTree(newer.Size, older.Size, r)
}

// InclusionProof is a proof that one event is in a checkpoint's tree:
// RFC 6962's audit path, with the checkpoint it is for.
type InclusionProof struct {
	Origin     string          `json:"origin"`
	Seq        int64           `json:"seq"`
	LeafIndex  int64           `json:"leaf_index"`
	TreeSize   int64           `json:"tree_size"`
	RootHash   tlog.Hash       `json:"root_hash"`
	LeafHash   tlog.Hash       `json:"leaf_hash"`
	AuditPath  []tlog.Hash     `json:"audit_path"`
	Body       json.RawMessage `json:"body,omitempty"` // the event's canonical body
	Checkpoint string          `json:"checkpoint"`     // the signed note
}

// ConsistencyProof is a proof that a newer checkpoint's tree extends an
// older one's: RFC 6962's consistency proof, with both checkpoints.
type ConsistencyProof struct {
	Origin        string      `json:"origin"`
	First         int64       `json:"first"`
	Second        int64       `json:"second"`
	FirstRoot     tlog.Hash   `json:"first_root"`
	SecondRoot    tlog.Hash   `json:"second_root"`
	Consistency   []tlog.Hash `json:"consistency"`
	OldCheckpoint string      `json:"old_checkpoint"`
	NewCheckpoint string      `json:"new_checkpoint"`
}

// Check verifies the proof: the checkpoint's signature (when verifiers are
// given), that the proof's size and root are the checkpoint's, and the
// audit path (tlog.CheckRecord). It returns the opened checkpoint.
func (p *InclusionProof) Check(verifiers ...note.Verifier) (*Signed, error) {
	s, err := Open([]byte(p.Checkpoint), verifiers...)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if err := sameHead(s, p.Origin, p.TreeSize, p.RootHash); err != nil {
		return nil, err
	}
	if p.LeafIndex != Index(p.Seq) {
		return nil, fmt.Errorf("leaf_index %d is not seq %d's (%d)", p.LeafIndex, p.Seq, Index(p.Seq))
	}
	if err := tlog.CheckRecord(p.AuditPath, p.TreeSize, p.RootHash, p.LeafIndex, p.LeafHash); err != nil {
		return nil, fmt.Errorf("the audit path does not lead from seq %d's leaf to the root: %w", p.Seq, err)
	}
	return s, nil
}

// Check verifies the proof: both checkpoints' signatures (when verifiers
// are given), that the sizes and roots are theirs, and the consistency
// proof (tlog.CheckTree).
func (p *ConsistencyProof) Check(verifiers ...note.Verifier) (older, newer *Signed, err error) {
	if older, err = Open([]byte(p.OldCheckpoint), verifiers...); err != nil {
		return nil, nil, fmt.Errorf("old checkpoint: %w", err)
	}
	if newer, err = Open([]byte(p.NewCheckpoint), verifiers...); err != nil {
		return nil, nil, fmt.Errorf("new checkpoint: %w", err)
	}
	if err := sameHead(older, p.Origin, p.First, p.FirstRoot); err != nil {
		return nil, nil, fmt.Errorf("old checkpoint: %w", err)
	}
	if err := sameHead(newer, p.Origin, p.Second, p.SecondRoot); err != nil {
		return nil, nil, fmt.Errorf("new checkpoint: %w", err)
	}
	if err := tlog.CheckTree(p.Consistency, p.Second, p.SecondRoot, p.First, p.FirstRoot); err != nil {
		return nil, nil, fmt.Errorf("the tree of size %d does not extend the tree of size %d: %w", p.Second, p.First, err)
	}
	return older, newer, nil
}

func sameHead(s *Signed, origin string, size int64, root tlog.Hash) error {
	switch {
	case s.Origin != origin:
		return fmt.Errorf("the checkpoint's origin is %q, the proof's %q", s.Origin, origin)
	case s.Size != size:
		return fmt.Errorf("the checkpoint's size is %d, the proof's %d", s.Size, size)
	case s.Root != root:
		return fmt.Errorf("the checkpoint's root is %s, the proof's %s", s.Root, root)
	}
	return nil
}

// Text forms, for people and for verify-proof: a title line, "key value"
// lines (hashes in base64, one audit-path or consistency line per hash),
// then the checkpoints' signed notes verbatim, each after a line naming it.
const (
	inclusionTitle   = "lockledger inclusion proof"
	consistencyTitle = "lockledger consistency proof"
)

// Text renders the proof's text form.
func (p *InclusionProof) Text() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\norigin %s\nseq %d\nleaf-index %d\ntree-size %d\nroot-hash %s\nleaf-hash %s\n",
		inclusionTitle, p.Origin, p.Seq, p.LeafIndex, p.TreeSize, p.RootHash, p.LeafHash)
	for _, h := range p.AuditPath {
		fmt.Fprintf(&b, "audit-path %s\n", h)
	}
	if len(p.Body) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, p.Body); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		fmt.Fprintf(&b, "body %s\n", c.Bytes())
	}
	b.WriteString("checkpoint\n")
	b.WriteString(p.Checkpoint)
	return b.Bytes(), nil
}

// Text renders the proof's text form.
func (p *ConsistencyProof) Text() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\norigin %s\nfirst %d\nsecond %d\nfirst-root %s\nsecond-root %s\n",
		consistencyTitle, p.Origin, p.First, p.Second, p.FirstRoot, p.SecondRoot)
	for _, h := range p.Consistency {
		fmt.Fprintf(&b, "consistency %s\n", h)
	}
	b.WriteString("old-checkpoint\n")
	b.WriteString(p.OldCheckpoint)
	b.WriteString("new-checkpoint\n")
	b.WriteString(p.NewCheckpoint)
	return b.Bytes(), nil
}

// ErrNotAProof: input that is neither form of a proof.
var ErrNotAProof = errors.New("not a lockledger proof")

// ParseProof reads a proof in its text or JSON form and returns an
// *InclusionProof or a *ConsistencyProof.
func ParseProof(data []byte) (any, error) {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) > 0 && data[0] == '{' {
		return parseJSON(data)
	}
	title, rest, _ := bytes.Cut(data, []byte("\n"))
	switch string(bytes.TrimSpace(title)) {
	case inclusionTitle:
		return parseInclusionText(rest)
	case consistencyTitle:
		return parseConsistencyText(rest)
	}
	return nil, fmt.Errorf("%w: the first line is neither %q nor %q, nor is it JSON", ErrNotAProof, inclusionTitle, consistencyTitle)
}

func parseJSON(data []byte) (any, error) {
	var probe struct {
		LeafIndex   *int64          `json:"leaf_index"`
		Consistency json.RawMessage `json:"consistency"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAProof, err)
	}
	dec := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(data))
		d.DisallowUnknownFields()
		if err := d.Decode(v); err != nil {
			return fmt.Errorf("%w: %v", ErrNotAProof, err)
		}
		return nil
	}
	switch {
	case probe.LeafIndex != nil:
		p := &InclusionProof{}
		return p, dec(p)
	case probe.Consistency != nil:
		p := &ConsistencyProof{}
		return p, dec(p)
	}
	return nil, fmt.Errorf("%w: JSON with neither leaf_index nor consistency", ErrNotAProof)
}

// fields reads "key value" lines up to a line that is a single word (the
// first checkpoint's header), which it returns with the rest.
func fields(rest []byte) (*textFields, string, []byte, error) {
	out := &textFields{f: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(rest))
	sc.Buffer(nil, 1<<24)
	off := 0
	for sc.Scan() {
		line := sc.Text()
		off += len(line) + 1
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			return out, k, rest[min(off, len(rest)):], nil
		}
		out.f[k] = append(out.f[k], v)
	}
	return nil, "", nil, fmt.Errorf("%w: no checkpoint", ErrNotAProof)
}

// textFields are the "key value" lines of a text form; the first error
// its readers meet is err, and they read nothing after it.
type textFields struct {
	f   map[string][]string
	err error
}

func (t *textFields) fail(format string, a ...any) {
	if t.err == nil {
		t.err = fmt.Errorf("%w: "+format, append([]any{ErrNotAProof}, a...)...)
	}
}

func (t *textFields) one(k string) string {
	if t.err == nil && len(t.f[k]) != 1 {
		t.fail("needs exactly one %q line", k)
	}
	if t.err != nil {
		return ""
	}
	return t.f[k][0]
}

func (t *textFields) int(k string) int64 {
	s := t.one(k)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.fail("%s %q is not a number", k, s)
	}
	return n
}

func (t *textFields) hash(k string) tlog.Hash { return t.parseHash(k, t.one(k)) }

func (t *textFields) parseHash(k, s string) tlog.Hash {
	h, err := tlog.ParseHash(s)
	if err != nil {
		t.fail("%s %q is not a base64 SHA-256 hash", k, s)
	}
	return h
}

func (t *textFields) hashes(k string) []tlog.Hash {
	var out []tlog.Hash
	for _, s := range t.f[k] {
		out = append(out, t.parseHash(k, s))
	}
	return out
}

func parseInclusionText(rest []byte) (*InclusionProof, error) {
	t, header, tail, err := fields(rest)
	if err != nil {
		return nil, err
	}
	if header != "checkpoint" {
		return nil, fmt.Errorf("%w: line %q where the checkpoint should start", ErrNotAProof, header)
	}
	p := &InclusionProof{Checkpoint: string(tail), Origin: t.one("origin"), Seq: t.int("seq"), LeafIndex: t.int("leaf-index"),
		TreeSize: t.int("tree-size"), RootHash: t.hash("root-hash"), LeafHash: t.hash("leaf-hash"),
		AuditPath: t.hashes("audit-path")}
	if t.err != nil {
		return nil, t.err
	}
	if b := t.f["body"]; len(b) == 1 {
		p.Body = json.RawMessage(b[0])
	} else if len(b) > 1 {
		return nil, fmt.Errorf("%w: more than one body line", ErrNotAProof)
	}
	return p, nil
}

func parseConsistencyText(rest []byte) (*ConsistencyProof, error) {
	t, header, tail, err := fields(rest)
	if err != nil {
		return nil, err
	}
	if header != "old-checkpoint" {
		return nil, fmt.Errorf("%w: line %q where the old checkpoint should start", ErrNotAProof, header)
	}
	old, nw, ok := bytes.Cut(tail, []byte("\nnew-checkpoint\n"))
	if !ok {
		return nil, fmt.Errorf("%w: no new-checkpoint line", ErrNotAProof)
	}
	p := &ConsistencyProof{OldCheckpoint: string(old) + "\n", NewCheckpoint: string(nw), Origin: t.one("origin"),
		First: t.int("first"), Second: t.int("second"), FirstRoot: t.hash("first-root"),
		SecondRoot: t.hash("second-root"), Consistency: t.hashes("consistency")}
	if t.err != nil {
		return nil, t.err
	}
	return p, nil
}
