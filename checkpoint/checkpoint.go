// Package checkpoint is the ledger's Merkle tree and its signed heads, in
// the formats of the Go checksum database (golang.org/x/mod/sumdb): an
// RFC 6962 tree over the events (sumdb/tlog), C2SP tlog-checkpoint text
// signed as a note (sumdb/note), and inclusion and consistency proofs. It
// does no I/O: the ledger stores the tree's hashes and the checkpoints,
// the command line reads and writes files.
//
// The leaf of an event is tlog.RecordHash of its stored canonical body:
// the exact bytes the chain hash covers. The body carries the event's seq
// and every one of its fields, so a leaf names its position and content;
// prev_hash and hash are left out because they follow from the bodies and
// the genesis, which the checkpoint's origin line fixes (it names the
// ledger id the genesis is derived from). Event seq s is tlog record s-1;
// a checkpoint's tree size is the number of events it covers.
package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// OriginPrefix starts every lockledger checkpoint's origin line; the
// ledger id follows.
const OriginPrefix = "lockledger/"

// Origin is the origin line of ledger id's checkpoints.
func Origin(ledgerID string) string { return OriginPrefix + ledgerID }

// LeafHash is the Merkle leaf of an event: tlog.RecordHash of its stored
// canonical body.
func LeafHash(body []byte) tlog.Hash { return tlog.RecordHash(body) }

// Index is the tlog record index of event seq.
func Index(seq int64) int64 { return seq - 1 }

// Checkpoint is a tree head: C2SP tlog-checkpoint text, before signing.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
	// Time, when set, is carried on an extension line ("time" and RFC
	// 3339 UTC): when the head was signed. Events appended after it are
	// dated no earlier.
	Time time.Time
	// NextEvery and NextWithin, when set, are carried on an extension line
	// ("next", the count, a Go duration): the signer signs its next
	// checkpoint once NextEvery more events are appended, and with the
	// first event dated NextWithin after Time, whichever comes first. A
	// writer signing on its own promises that; a checkpoint signed on
	// request promises nothing.
	NextEvery  int64
	NextWithin time.Duration
}

// ErrMalformed: text that is not a checkpoint.
var ErrMalformed = errors.New("not a C2SP tlog-checkpoint")

// goSumFirstLine is FormatTree's first line, for which a checkpoint has
// its origin line: the other lines are FormatTree's and ParseTree's.
const goSumFirstLine = "go.sum database tree\n"

// timePrefix and nextPrefix start the extension lines that carry the
// signing time and the signer's promise of the next checkpoint.
const (
	timePrefix = "time "
	nextPrefix = "next "
)

// Text is the checkpoint's note text: the origin line, then tree size and
// base64 root hash as tlog.FormatTree writes them, then the extension
// lines.
func (c Checkpoint) Text() []byte {
	tree := tlog.FormatTree(tlog.Tree{N: c.Size, Hash: c.Root})
	var b bytes.Buffer
	b.WriteString(c.Origin)
	b.WriteByte('\n')
	b.Write(tree[len(goSumFirstLine):])
	if !c.Time.IsZero() {
		b.WriteString(timePrefix + c.Time.UTC().Format(time.RFC3339Nano) + "\n")
	}
	if c.NextEvery > 0 && c.NextWithin > 0 {
		fmt.Fprintf(&b, "%s%d %s\n", nextPrefix, c.NextEvery, c.NextWithin)
	}
	return b.Bytes()
}

// Tree is the checkpoint as tlog's tree description.
func (c Checkpoint) Tree() tlog.Tree { return tlog.Tree{N: c.Size, Hash: c.Root} }

// ParseText reads checkpoint text (the note's text, without signatures).
// Unknown extension lines are ignored, as C2SP asks.
func ParseText(text []byte) (Checkpoint, error) {
	origin, rest, ok := bytes.Cut(text, []byte("\n"))
	if !ok || len(origin) == 0 {
		return Checkpoint{}, fmt.Errorf("%w: no origin line", ErrMalformed)
	}
	tree, err := tlog.ParseTree(append([]byte(goSumFirstLine), rest...))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	c := Checkpoint{Origin: string(origin), Size: tree.N, Root: tree.Hash}
	lines := strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n")
	for _, l := range lines[2:] {
		if l == "" {
			return Checkpoint{}, fmt.Errorf("%w: empty extension line", ErrMalformed)
		}
		if s, ok := strings.CutPrefix(l, timePrefix); ok {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return Checkpoint{}, fmt.Errorf("%w: time line %q: %v", ErrMalformed, l, err)
			}
			c.Time = t.UTC()
		}
		if s, ok := strings.CutPrefix(l, nextPrefix); ok {
			n, d, _ := strings.Cut(s, " ")
			every, err1 := strconv.ParseInt(n, 10, 64)
			within, err2 := time.ParseDuration(d)
			if err1 != nil || err2 != nil || every < 1 || within <= 0 {
				return Checkpoint{}, fmt.Errorf("%w: next line %q", ErrMalformed, l)
			}
			c.NextEvery, c.NextWithin = every, within
		}
	}
	return c, nil
}

// LedgerID is the ledger id the origin line names, "" when the origin is
// not a lockledger one.
func (c Checkpoint) LedgerID() string {
	id, ok := strings.CutPrefix(c.Origin, OriginPrefix)
	if !ok {
		return ""
	}
	return id
}
