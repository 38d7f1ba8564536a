package stream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/events"
)

// CloudEvents 1.0 in the JSON event format, one event per line:
//
//	specversion     "1.0"
//	id              the event's event_id
//	source          lockledger:<ledger id>
//	type            dev.lockledger.<event type>
//	time            the event's at
//	datacontenttype application/json
//	data            the event's stored canonical body
//	sequence        the seq, zero-padded to 19 digits: the sequence
//	                extension asks for a string that orders
//	                lexicographically
//	lockledgerseq   the seq as a plain decimal string
//	lockledgerleaf  the Merkle leaf hash (base64)
//	lockledgerhash, lockledgerprevhash  the chain hashes (hex)
//
// A checkpoint is an event of type dev.lockledger.checkpoint, with no
// sequence, whose data is {"size","root","note"}.

// CloudEventsSource is the source attribute of a ledger's events.
func CloudEventsSource(ledgerID string) string { return "lockledger:" + ledgerID }

// CloudEventsType is the type attribute of an event of type t.
func CloudEventsType(t events.Type) string { return "dev.lockledger." + string(t) }

// SequenceWidth is the width of the sequence attribute: every int64 seq fits.
const SequenceWidth = 19

type cloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Time            string          `json:"time,omitempty"`
	DataContentType string          `json:"datacontenttype"`
	Sequence        string          `json:"sequence,omitempty"`
	Seq             string          `json:"lockledgerseq,omitempty"`
	Leaf            string          `json:"lockledgerleaf,omitempty"`
	Hash            string          `json:"lockledgerhash,omitempty"`
	PrevHash        string          `json:"lockledgerprevhash,omitempty"`
	Data            json.RawMessage `json:"data"`
}

type cloudEventsWriter struct {
	lineWriter
	source string
}

func (c *cloudEventsWriter) Start(int64, []tlog.Hash) error { return nil }

func (c *cloudEventsWriter) Event(r *Record) error {
	id := r.Env.EventID
	if id == "" {
		id = fmt.Sprintf("seq-%d", r.Row.Seq)
	}
	typ := CloudEventsType(r.Env.Type)
	if r.Env.Type == "" {
		typ = CloudEventsType("unknown")
	}
	ev := cloudEvent{SpecVersion: "1.0", ID: id, Source: c.source, Type: typ, DataContentType: "application/json",
		Sequence: fmt.Sprintf("%0*d", SequenceWidth, r.Row.Seq), Seq: strconv.FormatInt(r.Row.Seq, 10),
		Leaf: r.Leaf.String(), Hash: r.Row.Hash, PrevHash: r.Row.PrevHash, Data: bodyJSON(r.Row.Body)}
	if !r.Time.IsZero() {
		ev.Time = r.Time.Format(time.RFC3339Nano)
	}
	return c.write(&ev)
}

func (c *cloudEventsWriter) Checkpoint(cp *Checkpoint) error {
	sum := sha256.Sum256(cp.Note)
	data, err := json.Marshal(struct {
		Size int64  `json:"size"`
		Root string `json:"root"`
		Note string `json:"note"`
	}{cp.Text.Size, cp.Text.Root.String(), string(cp.Note)})
	if err != nil {
		return err
	}
	ev := cloudEvent{SpecVersion: "1.0", ID: "checkpoint-" + strconv.FormatInt(cp.Text.Size, 10) + "-" + hex.EncodeToString(sum[:8]),
		Source: c.source, Type: CloudEventsType("checkpoint"), DataContentType: "application/json", Data: data}
	if !cp.Text.Time.IsZero() {
		ev.Time = cp.Text.Time.UTC().Format(time.RFC3339Nano)
	}
	return c.write(&ev)
}

func (c *cloudEventsWriter) write(ev *cloudEvent) error {
	c.buf.Reset()
	enc := json.NewEncoder(&c.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return err
	}
	return c.flush()
}
