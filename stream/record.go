// Package stream follows a ledger's log as it grows and writes every event
// once, in seq order, with its Merkle leaf hash and the signed checkpoints
// that vouch for it, in one of the formats log collectors read: the JSON
// Lines of export, CloudEvents, or RFC 5424 syslog. A follower is a read:
// it opens no transaction longer than one batch and writes nothing to the
// ledger.
package stream

import (
	"bytes"
	"encoding/json"
	"io"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

// Record is one event as streamed.
type Record struct {
	Row  *replay.Row
	Leaf tlog.Hash // the event's Merkle leaf: checkpoint.LeafHash of its body
	Env  events.Envelope
	Time time.Time // Env.At (zero when it does not parse)
}

func newRecord(row *replay.Row) *Record {
	r := &Record{Row: row, Leaf: checkpoint.LeafHash(row.Body)}
	_ = json.Unmarshal(row.Body, &r.Env) // a damaged body leaves the envelope empty; the body is written as it is
	if t, err := events.ParseTime(r.Env.At); err == nil {
		r.Time = t.UTC()
	}
	return r
}

// bodyJSON is a stored body as JSON on one line: compacted, or a damaged
// row's bytes as a JSON string, as export writes it.
func bodyJSON(body []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, body) == nil {
		return b.Bytes()
	}
	q, _ := json.Marshal(string(body)) // a string always marshals
	return q
}

// Checkpoint is a signed checkpoint as streamed: the note as the ledger
// stores it, with what its text says (unchecked: the receiver checks the
// signature with the writers' key).
type Checkpoint struct {
	Note []byte
	Text checkpoint.Checkpoint
}

// Writer writes records in one format. Each call writes whole lines in one
// write to the underlying writer, so that a reader of a pipe sees every
// record as soon as it is written, and a follower killed between two
// records leaves only whole records behind.
type Writer interface {
	// Start is written once, before the first record: for a stream that
	// starts after seq size, the Merkle tree before it (frontier).
	Start(size int64, frontier []tlog.Hash) error
	Event(r *Record) error
	Checkpoint(c *Checkpoint) error
}

// Formats a follower writes.
const (
	FormatJSONL       = "jsonl"
	FormatCloudEvents = "cloudevents"
	FormatSyslog      = "syslog"
)

// NewWriter makes the writer of format for the ledger ledgerID, writing to w.
func NewWriter(format string, w io.Writer, ledgerID, hostname string) (Writer, error) {
	switch format {
	case FormatJSONL:
		return &jsonlWriter{lineWriter{w: w}}, nil
	case FormatCloudEvents:
		return &cloudEventsWriter{lineWriter: lineWriter{w: w}, source: CloudEventsSource(ledgerID)}, nil
	case FormatSyslog:
		return &syslogWriter{lineWriter: lineWriter{w: w}, hostname: headerToken(hostname, 255)}, nil
	}
	return nil, events.Invalid("--format", format, "must be jsonl, cloudevents or syslog")
}
