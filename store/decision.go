package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// A decision's statements while its group holds the writer row, on an
// engine whose database has the decision functions (PostgreSQL, migration
// 0012): one call reads what the decision needs (LoadDecision), and its
// writes (InsertEvent, InsertTreeRow, SaveHolder, DeleteHolder,
// DeleteExclusive, SaveRow through the transaction's PreparedTx) are kept
// in Go and sent in one call when the decision is settled (Settle), or
// before any other statement of the transaction, in the order they were
// made. Only the decisions that begin with LoadDecision (those on a
// lock) keep their writes so. Reads of the lock's shared holders, its queue and its holder's
// acquiring event are answered from the first call until the decision
// writes. Each call is one short statement, parsed once; the functions'
// own statements keep their plans for the session. Elsewhere every
// statement runs as it is written.

// decisionBatch is the state of one transaction's decisions: whether the
// decision under way began with LoadDecision (on: only its writes are
// kept), the writes not sent yet, what it read in one call, and the error
// of a send made before a statement (reported when it is settled).
type decisionBatch struct {
	on     bool
	writes decisionWrites
	n      int
	read   *decisionRead
	lock   string
	since  string
	err    error
}

// decisionWrites is lockledger_write_decision's argument: events and
// Merkle rows in their tables' columns (bytea as \x hex text), then the
// locks' and holders' rows, each with its op.
type decisionWrites struct {
	Events []eventJSON `json:"events,omitempty"`
	Tree   []treeJSON  `json:"tree,omitempty"`
	Rows   []any       `json:"rows,omitempty"`
}

type eventJSON struct {
	Seq       int64  `json:"seq"`
	EventID   string `json:"event_id"`
	Type      string `json:"type"`
	LockName  string `json:"lock_name"`
	RequestID string `json:"request_id"`
	Actor     string `json:"actor"`
	At        string `json:"at"`
	Body      string `json:"body"`
	PrevHash  string `json:"prev_hash"`
	Hash      string `json:"hash"`
}

type treeJSON struct {
	Seq    int64  `json:"seq"`
	Hashes string `json:"hashes"`
}

type holderJSON struct {
	Op            string `json:"op"`
	LockName      string `json:"lock_name"`
	RequestID     string `json:"request_id"`
	Actor         string `json:"actor"`
	Intent        string `json:"intent"`
	IntentVersion string `json:"intent_version"`
	HostID        string `json:"host_id"`
	PID           int    `json:"pid"`
	PIDStart      string `json:"pid_start"`
	BootID        string `json:"boot_id"`
	CreatedAt     string `json:"created_at"`
	HeartbeatAt   string `json:"heartbeat_at"`
	TTLSeconds    int64  `json:"ttl_seconds"`
	Metadata      string `json:"metadata"`
	FencingToken  int64  `json:"fencing_token"`
	Limit         int64  `json:"slot_limit"`
	UpdatedSeq    int64  `json:"updated_seq"`
	PIDNS         *int64 `json:"pid_ns"`
	Exclusive     int    `json:"exclusive"`
	Targets       string `json:"targets"`
}

type lockJSON struct {
	Op           string `json:"op"`
	LockName     string `json:"lock_name"`
	RequestID    string `json:"request_id"`
	HostID       string `json:"host_id"`
	FencingToken int64  `json:"fencing_token"`
	UpdatedSeq   int64  `json:"updated_seq"`
	File         string `json:"file"`
	Targets      string `json:"targets"`
}

// deleteJSON deletes a holder's row: any (delete_holder) or only an
// exclusive one (delete_exclusive).
type deleteJSON struct {
	Op        string `json:"op"`
	LockName  string `json:"lock_name"`
	RequestID string `json:"request_id"`
}

// decisionRead is lockledger_read_decision's result.
type decisionRead struct {
	Row      *Row
	Shared   []*HolderRow
	Queue    []QueuedRow
	Acquired []byte
	Head     *struct {
		Seq, Updated, Hashed int64
		Hash                 string
	}
	Tree []struct {
		Seq    int64
		Hashes []byte
	}
}

// byteaText is b as PostgreSQL's bytea input reads it.
func byteaText(b []byte) string { return `\x` + hex.EncodeToString(b) }

// batchOf is the decision batch of q, nil when q sends every statement.
func batchOf(q any) *decisionBatch {
	if p, ok := q.(PreparedTx); ok && p.batch != nil && p.batch.on {
		return p.batch
	}
	return nil
}

// add keeps one write: what the decision read in one call no longer holds.
func (b *decisionBatch) add(f func(w *decisionWrites)) {
	f(&b.writes)
	b.n++
	b.read = nil
}

// send sends the writes kept, in one call.
func (b *decisionBatch) send(ctx context.Context, q Execer) error {
	b.read = nil
	if b.n == 0 {
		return nil
	}
	arg, err := json.Marshal(b.writes)
	b.writes, b.n = decisionWrites{}, 0
	if err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `SELECT lockledger_write_decision($1::json)`, string(arg)); err != nil {
		return fmt.Errorf("ledger: append: %w", err)
	}
	return nil
}

// Settle ends the decision the transaction's statements were for: its
// writes not sent yet are sent (keep) or dropped, and what it read in one
// call is forgotten. Its error is the send's, or that of a send made
// before a statement of the decision (which then failed too).
func (p PreparedTx) Settle(ctx context.Context, keep bool) error {
	b := p.batch
	if b == nil {
		return nil
	}
	err := b.err
	b.err = nil
	if err == nil && keep {
		b.on = false
		return b.send(ctx, p.tx)
	}
	b.writes, b.n, b.read, b.on = decisionWrites{}, 0, nil, false
	return err
}

// flush sends the writes kept before another statement runs in the
// transaction; an error is kept for Settle.
func (p PreparedTx) flush(ctx context.Context) {
	if b := p.batch; b != nil && b.n > 0 {
		if err := b.send(ctx, p.tx); err != nil && b.err == nil {
			b.err = err
		}
	}
}

// LoadDecision reads what a decision on lock name reads first: the lock's
// row, and with head the head of the log (as LoadRowTip; without, as
// LoadRow). Through a transaction of the decision calls it reads in the
// same call the lock's shared holders, its queue's candidates recorded at
// or after since (LoadQueued), its exclusive holder's acquiring event
// (EventBody) and, with head, the Merkle rows an append after the head
// reads, which it adds to known (see AppendTree).
func LoadDecision(ctx context.Context, q PreparedTx, name, since string, head bool, known map[int64][]byte) (*Row, Tip, error) {
	b := q.batch
	if b == nil {
		if head {
			return LoadRowTip(ctx, q, name)
		}
		r, err := LoadRow(ctx, q, name)
		return r, Tip{}, err
	}
	q.flush(ctx)
	var raw []byte
	if err := q.tx.QueryRowContext(ctx, `SELECT lockledger_read_decision($1, $2, $3)`, name, since, head).Scan(&raw); err != nil {
		return nil, Tip{}, err
	}
	var d decisionRead
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, Tip{}, fmt.Errorf("ledger: the lock's rows as read in one call: %w", err)
	}
	var t Tip
	if d.Head != nil {
		t = Tip{seq: d.Head.Seq, updated: d.Head.Updated, hashed: d.Head.Hashed, hash: d.Head.Hash, read: true}
		for _, r := range d.Tree {
			known[r.Seq] = r.Hashes
		}
	}
	b.on, b.read, b.lock, b.since = true, &d, name, since
	return d.Row, t, nil
}

// readShared is LoadShared's answer from the decision's one call, if any.
func (b *decisionBatch) readShared(name string) ([]*HolderRow, bool) {
	if b == nil || b.read == nil || b.lock != name {
		return nil, false
	}
	return b.read.Shared, true
}

// readQueued is LoadQueued's answer from the decision's one call, if any.
func (b *decisionBatch) readQueued(lock, since string) ([]QueuedRow, bool) {
	if b == nil || b.read == nil || lock == "" || b.lock != lock || b.since != since {
		return nil, false
	}
	return b.read.Queue, true
}

// readAcquired is EventBody's answer from the decision's one call, if any:
// the acquiring event of the lock's exclusive holder.
func (b *decisionBatch) readAcquired(seq int64, requestID string) ([]byte, bool) {
	if b == nil || b.read == nil {
		return nil, false
	}
	r := b.read.Row
	if r == nil || !r.Held || r.FencingToken != seq || r.RequestID != requestID {
		return nil, false
	}
	return b.read.Acquired, true
}
