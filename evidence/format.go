// Package evidence writes and checks the evidence bundle of an audit
// period: one JSON Lines file holding the period's events, two signed
// checkpoints (at or before its start, at or after its end) and the
// consistency proofs that make the period's events positions first..last
// of the signed log, the events at its two edges that show where it
// stops, the witnesses' cosignatures, the signer keys, and a summary of
// what happened to each lock, recomputed by the checker from the events.
// docs/evidence.md describes the format line by line, for verifiers
// written elsewhere.
package evidence

import (
	"encoding/json"
	"errors"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/replay"
)

// Version is the format's version, in the header line.
const Version = 1

// Header is the first line's object ({"evidence": Header}): what the
// bundle claims. Nothing in it is trusted: the checker holds every claim
// to the events and the signed checkpoints.
type Header struct {
	Version  int    `json:"version"`
	LedgerID string `json:"ledger_id"`
	Origin   string `json:"origin"`
	Since    string `json:"since"`
	Until    string `json:"until"`
	// FirstSeq..LastSeq are the period's events: from the first dated at
	// or after Since to the last dated at or before Until.
	FirstSeq int64  `json:"first_seq"`
	LastSeq  int64  `json:"last_seq"`
	Events   int64  `json:"events"`
	MadeAt   string `json:"made_at"`
}

// Proof is a consistency proof line ({"proof": Proof}): the tree of From
// records is a prefix of the tree of To records (RFC 6962 section 2.1.2,
// as golang.org/x/mod/sumdb/tlog makes it).
type Proof struct {
	Kind   string      `json:"kind"`
	From   int64       `json:"from"`
	To     int64       `json:"to"`
	Hashes []tlog.Hash `json:"hashes"`
}

// The two proofs a bundle carries.
const (
	// StartToEnd: from the start checkpoint's tree to the end's.
	StartToEnd = "start_to_end"
	// EventsToEnd: from the tree that ends with the bundle's last event
	// line to the end checkpoint's tree.
	EventsToEnd = "events_to_end"
)

// OpenedBefore is a line ({"opened_before": OpenedBefore}) for each
// holding open when the period starts: the event that opened it (in the
// export line form) and its inclusion proof in the end checkpoint's tree
// (RFC 6962 section 2.1.1, tlog's RecordProof). The summary's fold starts
// from them.
type OpenedBefore struct {
	Event     json.RawMessage `json:"event"`
	Inclusion []tlog.Hash     `json:"inclusion"`
}

// Summary is the last line's object ({"summary": Summary}): what
// happened in the period, lock by lock. The checker recomputes it from
// the events and fails a bundle whose summary differs.
type Summary struct {
	Locks []LockSummary `json:"locks"`
	// Exclusive is the statement about exclusive holdings: none
	// overlapped, or how many did (Overlaps lists them).
	Exclusive string           `json:"exclusive"`
	Overlaps  []replay.Overlap `json:"overlaps"`
}

// LockSummary is one lock's period.
type LockSummary struct {
	Lock string `json:"lock"`
	// Holdings are the holdings that overlap the period, by opening seq.
	Holdings        []HoldingLine `json:"holdings"`
	Waits           int           `json:"waits"`          // requests that waited (acquire_blocked), counted once each
	BlockedEvents   int           `json:"blocked_events"` // acquire_blocked events
	Refusals        []Item        `json:"refusals"`
	Steals          []Item        `json:"steals"`
	ForcedReleases  []Item        `json:"forced_releases"`
	FenceRejections []Item        `json:"fence_rejections"`
}

// HoldingLine is one holding: who held, from which event to which.
type HoldingLine struct {
	RequestID string `json:"request_id"`
	Actor     string `json:"actor"`
	Host      string `json:"host"`
	Mode      string `json:"mode"`
	FromSeq   int64  `json:"from_seq"`
	FromAt    string `json:"from_at"`
	// BeforePeriod: opened before the period (an opened_before line).
	BeforePeriod bool `json:"before_period,omitempty"`
	// ToSeq and ToAt are the event that ended it (0 and "" when it still
	// held at the period's end); EndedBy is that event's type.
	ToSeq   int64  `json:"to_seq,omitempty"`
	ToAt    string `json:"to_at,omitempty"`
	EndedBy string `json:"ended_by,omitempty"`
}

// Item is one event the summary names: a refusal, a steal, a forced
// release, a fence's rejection.
type Item struct {
	Seq       int64  `json:"seq"`
	At        string `json:"at"`
	Actor     string `json:"actor"`
	Host      string `json:"host"`
	RequestID string `json:"request_id"`
	// What: the refused action, the steal's or release's reason, the
	// fence and resource.
	What string `json:"what"`
	// Detail: from whom (a steal's previous holder, a forced release's
	// released request), the refusal's error, the tokens of a rejection.
	Detail string `json:"detail,omitempty"`
}

// ErrNoEndCheckpoint: no signed checkpoint covers the period's end yet
// (events after it, or signed after it): sign one (lockledger checkpoint)
// and make the bundle again.
var ErrNoEndCheckpoint = errors.New("no signed checkpoint covers the end of the period")

// ErrNoStartCheckpoint: the period starts after seq 1 and no signed
// checkpoint is at or before its start.
var ErrNoStartCheckpoint = errors.New("no signed checkpoint at or before the start of the period")

// ErrNoEvents: no event is dated within the period.
var ErrNoEvents = errors.New("no event is dated within the period")

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
