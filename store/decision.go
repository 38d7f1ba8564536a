package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockledger/lockledger/events"
)

// A decision's statements while its group holds the writer row, on an
// engine whose database has the decision functions (PostgreSQL, migration
// 0012): one call reads, for every lock of the group, what its
// decision reads (ReadAhead, answering LoadDecision), and the writes of
// every decision that stands (InsertEvent, InsertTreeRow, SaveHolder,
// DeleteHolder, DeleteExclusive, SaveRow through the transaction's
// PreparedTx) are kept in Go and sent in one call before the commit
// (Flush), or before any other statement of the transaction, in the order
// they were made. A decision that fails drops its own. Only the decisions
// that begin with LoadDecision (those on a lock) keep their writes so.
// Reads of a lock's row, shared holders, queue and holder's acquiring event
// are answered from the group's read while nothing kept or sent names the
// lock, then from the decision's own call until it writes. Each call is
// one short statement, parsed once; the functions' own statements keep
// their plans for the session. Elsewhere every statement runs as it is
// written.

// decisionBatch is the state of one transaction's decisions: whether the
// decision under way began with LoadDecision (on: only its writes are
// kept), the writes not sent yet (those before kept are the settled
// decisions'), what the group and the decision read, and the error of a
// send made before a statement (reported when it is settled).
type decisionBatch struct {
	on     bool
	writes decisionWrites
	kept   mark
	read   *decisionRead
	lock   string
	since  string
	err    error
	// lazy: the decision under way takes its savepoint at its first
	// statement (Savepoint); saved: it has.
	lazy, saved bool
	// refused is the error of a send of settled decisions' writes: the
	// transaction is aborted.
	refused error
	// ahead is the group's read by lock, at aheadSince; aheadHead the head
	// it read, while nothing has been written since.
	ahead      map[string]*decisionRead
	aheadSince string
	aheadHead  *decisionRead
}

// mark is a place in a decisionWrites: how many of each kind come before.
type mark struct{ events, tree, rows int }

func (w *decisionWrites) end() mark { return mark{len(w.Events), len(w.Tree), len(w.Rows)} }

// cut splits w at m: what comes before, and w keeps the rest.
func (w *decisionWrites) cut(m mark) decisionWrites {
	before := decisionWrites{w.Events[:m.events], w.Tree[:m.tree], w.Rows[:m.rows]}
	*w = decisionWrites{w.Events[m.events:], w.Tree[m.tree:], w.Rows[m.rows:]}
	return before
}

// decisionWrites is lockledger_write_decision's argument: events and
// Merkle rows in their tables' columns (bytea as \x hex text), then the
// locks' and holders' rows, each with its op. The types below are not
// HolderRow and Row with tags: the function reads rows as its tables'
// columns (json_populate_record: column names, exclusive an integer, a
// file as bytea text), while lockledger_read_decision answers in those
// types' field names (decisionRead), which encoding/json reads untagged.
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

// byteaText is b as PostgreSQL's bytea input reads it, in the shorter of
// that input's two forms. An event's body and a lock file are text, which
// the escape form carries nearly as is, where the hex form doubles it: the
// argument a group's write sends is a quarter smaller, for the JSON built
// here, every copy of it on the way, and the server's parse. A hash is not
// text, and goes as hex. The escape form writes every byte but printable
// ASCII, newline and tab as an octal escape, so that the text is ASCII
// whatever the database's encoding, and never holds a NUL (which a JSON
// string cannot carry into a PostgreSQL text).
func byteaText(b []byte) string {
	n := 0 // the escape form's length
	for _, c := range b {
		switch {
		case c == '\\':
			n += 2
		case c >= ' ' && c <= '~', c == '\n', c == '\t':
			n++
		default:
			n += 4
		}
	}
	if n >= 2+hex.EncodedLen(len(b)) {
		return string(hex.AppendEncode([]byte(`\x`), b))
	}
	var s strings.Builder
	s.Grow(n)
	for _, c := range b {
		switch {
		case c == '\\':
			s.WriteString(`\\`)
		case c >= ' ' && c <= '~', c == '\n', c == '\t':
			s.WriteByte(c)
		default:
			s.WriteByte('\\')
			s.WriteByte('0' + c>>6)
			s.WriteByte('0' + c>>3&7)
			s.WriteByte('0' + c&7)
		}
	}
	return s.String()
}

// batchOf is the decision batch of q, nil when q sends every statement.
func batchOf(q any) *decisionBatch {
	if p, ok := q.(PreparedTx); ok && p.batch != nil && p.batch.on {
		return p.batch
	}
	return nil
}

// add keeps one write, of lock's rows ("" for none): what the decision
// read in one call no longer holds, nor what the group read of the lock
// and of the head.
func (b *decisionBatch) add(lock string, f func(w *decisionWrites)) {
	f(&b.writes)
	b.read, b.aheadHead = nil, nil
	delete(b.ahead, lock)
}

// send sends the writes kept before m (the settled decisions' writes, or
// all), and one notification for each of wakes, in one call.
func (b *decisionBatch) send(ctx context.Context, q Execer, m mark, wakes []string) error {
	b.read = nil
	if m == (mark{}) && len(wakes) == 0 {
		return nil
	}
	var arg any // no writes: NULL
	if m != (mark{}) {
		e := writeEncoders.Get().(*writeEncoder)
		defer writeEncoders.Put(e)
		e.buf.Reset()
		err := e.enc.Encode(b.writes.cut(m))
		b.kept = mark{}
		if err != nil {
			return err
		}
		// As JSON, which pgx copies into the statement's parameters as
		// it is, where a string would be one more copy of it; without
		// the encoder's newline, json.Marshal's bytes. The buffer is
		// the pool's again once the statement has run.
		arg = json.RawMessage(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")))
	}
	if err := notifyWith(ctx, q, arg, wakes); err != nil {
		return fmt.Errorf("ledger: append: %w", err)
	}
	return nil
}

// writeEncoder is a json.Encoder on a buffer of its own, both kept between
// a group's writes: the argument is encoded into a buffer grown once, not
// into a new one for each write.
type writeEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var writeEncoders = sync.Pool{New: func() any {
	e := &writeEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// NotifyChannel carries the name of every lock a write changed.
const NotifyChannel = "lockledger"

// writeDecisions is lockledger_write_decision (migration 0012) of the
// writes $1 (none when null), and in the same round trip one
// notification on channel $2 for each of the locks $3, with the lock's
// name as its payload (none when null). The server delivers the
// notifications at the commit, and drops them with the transaction, so
// where in it they are sent does not matter.
const writeDecisions = `SELECT lockledger_write_decision($1::json), (SELECT count(pg_notify($2, lock)) FROM unnest($3::text[]) AS lock)`

// Notify sends, as part of tx, one notification on NotifyChannel per lock
// of locks, in one round trip: a group's notifications where it has no
// writes to send with them (see Flush).
func Notify(ctx context.Context, tx Execer, locks []string) error {
	return notifyWith(ctx, tx, nil, locks)
}

// notifyWith runs writeDecisions: the writes arg (nil: none), the
// notifications of locks.
func notifyWith(ctx context.Context, tx Execer, arg any, locks []string) error {
	var channel any // no notifications: NULL
	if len(locks) > 0 {
		channel = NotifyChannel
	}
	_, err := tx.ExecContext(ctx, writeDecisions, arg, channel, locks)
	return err
}

// Settle ends the decision the transaction's statements were for: its
// writes not sent yet are kept for the group's one write (keep) or
// dropped, and what it read in one call is forgotten. Its error is that of
// a send made before a statement of the decision (which then failed too).
func (p PreparedTx) Settle(keep bool) error {
	b := p.batch
	if b == nil {
		return nil
	}
	err := b.err
	b.err, b.on, b.read, b.lazy = nil, false, nil, false
	if err == nil && keep {
		b.kept = b.writes.end()
		return nil
	}
	b.writes = b.writes.cut(b.kept)
	return err
}

// Flush sends the writes the settled decisions kept, and one notification
// for each of wakes (see Notify), in one call: the group's write, before
// its commit. It reports whether it sent the notifications: without the
// decision calls it sends nothing, and the store's Changed sends them. Its
// error is the transaction's (the database refused a write, and the
// transaction is aborted), as is that of an earlier send of settled
// decisions' writes (Refused).
func (p PreparedTx) Flush(ctx context.Context, wakes []string) (notified bool, err error) {
	b := p.batch
	if b == nil {
		return false, nil
	}
	if b.refused == nil {
		if err := b.send(ctx, p.tx, b.writes.end(), wakes); err != nil {
			b.refused = err
		}
	}
	return true, b.refused
}

// Refused is the error of a send of the settled decisions' writes, or of
// the savepoint after them, once one failed: nothing the transaction
// wrote stands.
func (p PreparedTx) Refused() error {
	if p.batch == nil {
		return nil
	}
	return p.batch.refused
}

// flush sends the writes kept before another statement runs in the
// transaction: first the settled decisions', then, once the decision
// under way has taken its savepoint (when it takes one lazily), its own.
// An error is kept for Settle; one before the savepoint is taken leaves
// the transaction refused, as the decision has nothing of its own to roll
// back to.
func (p PreparedTx) flush(ctx context.Context) {
	b := p.batch
	if b == nil {
		return
	}
	if b.lazy {
		b.lazy = false
		err := b.send(ctx, p.tx, b.kept, nil)
		if err == nil {
			err = savepoint(ctx, p.tx)
		}
		if err != nil {
			b.refused, b.err = err, cmp.Or(b.err, err)
			return
		}
		b.saved = true
	}
	if err := b.send(ctx, p.tx, b.writes.end(), nil); err != nil {
		b.err = cmp.Or(b.err, err)
	}
}

// QueueSince is the oldest instant a decision at now reads its lock's
// queue from: a waiter recorded before it is gone.
func QueueSince(now time.Time) string { return events.FormatTime(now.Add(-events.WaiterTTL)) }

// readGroup reads the database's clock once and, in the same statement,
// runs lockledger_read_decision (migrations 0012, 0013) for each of the locks $1,
// in their order, with the head and the Merkle rows for the first only, at
// the queue's since computed from that clock as QueueSince computes it ($2
// the waiters' TTL in microseconds; to_char's microseconds, the clock's
// precision, padded to events.TimeFormat's nanoseconds).
const readGroup = `WITH c AS MATERIALIZED (SELECT clock_timestamp() AS now),
	s AS MATERIALIZED (SELECT now, to_char((now - $2 * interval '1 microsecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') || '000Z' AS since FROM c)
	SELECT now, since, (SELECT coalesce(json_agg(lockledger_read_decision(l, since, i = 1) ORDER BY i), '[]')
		FROM unnest($1::text[]) WITH ORDINALITY AS t(l, i))
	FROM s`

// ReadAhead reads the database's clock and, in the same call, what
// LoadDecision reads for each of locks (the head with the first) at the
// queue's since of that clock (QueueSince): each lock's decision then
// reads it from there. It is the clock of a group's decisions, read once
// they are all asked for; without the decision calls it reads nothing and
// returns the zero time, and the store's Clock is the clock.
func (p PreparedTx) ReadAhead(ctx context.Context, locks []string) (time.Time, error) {
	b := p.batch
	if b == nil {
		return time.Time{}, nil
	}
	now, since, ds, err := p.queryGroup(ctx, locks)
	if err != nil {
		return time.Time{}, err
	}
	if len(locks) == 0 {
		return now.UTC(), nil
	}
	if len(ds) != len(locks) {
		return time.Time{}, fmt.Errorf("ledger: the group's locks as read in one call: %d rows for %d locks", len(ds), len(locks))
	}
	b.ahead, b.aheadSince, b.aheadHead = map[string]*decisionRead{}, since, ds[0]
	for i, d := range ds {
		b.ahead[locks[i]] = d
	}
	return now.UTC(), nil
}

// queryGroup runs the statement readGroup for locks. The reply is decoded
// from the driver's own buffer (sql.RawBytes), not from a copy of it: it is
// the largest value a group reads.
func (p PreparedTx) queryGroup(ctx context.Context, locks []string) (now time.Time, since string, ds []*decisionRead, err error) {
	rows, err := p.QueryContext(ctx, readGroup, locks, events.WaiterTTL.Microseconds())
	if err != nil {
		return now, "", nil, fmt.Errorf("ledger: read the database's clock and the group's locks: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return now, "", nil, fmt.Errorf("ledger: read the database's clock and the group's locks: %w", cmp.Or(rows.Err(), sql.ErrNoRows))
	}
	var raw sql.RawBytes
	if err := rows.Scan(&now, &since, &raw); err != nil {
		return now, "", nil, fmt.Errorf("ledger: read the database's clock and the group's locks: %w", err)
	}
	if len(locks) > 0 {
		if err := json.Unmarshal(raw, &ds); err != nil {
			return now, "", nil, fmt.Errorf("ledger: the group's locks as read in one call: %w", err)
		}
	}
	return now, since, ds, rows.Close()
}

// LoadDecision reads what a decision on lock name reads first: the lock's
// row, and with head the head of the log (as LoadRowTip; without, as
// LoadRow). Through a transaction of the decision calls it reads in the
// same call the lock's shared holders, its queue's candidates recorded at
// or after since (LoadQueued), its exclusive holder's acquiring event
// (EventBody) and, with head, the Merkle rows an append after the head
// reads, which it adds to known (see AppendTree): from the group's read
// (ReadAhead) while nothing since names the lock (nor, with head, wrote
// anything), else in a call of its own.
func LoadDecision(ctx context.Context, q PreparedTx, name, since string, head bool, known map[int64][]byte) (*Row, Tip, error) {
	b := q.batch
	if b == nil {
		if head {
			return LoadRowTip(ctx, q, name)
		}
		r, err := LoadRow(ctx, q, name)
		return r, Tip{}, err
	}
	d, at := b.ahead[name], b.aheadHead
	if d == nil || since != b.aheadSince || (head && at == nil) {
		q.flush(ctx)
		var raw []byte
		if err := q.tx.QueryRowContext(ctx, `SELECT lockledger_read_decision($1, $2, $3)`, name, since, head).Scan(&raw); err != nil {
			return nil, Tip{}, err
		}
		d = &decisionRead{}
		if err := json.Unmarshal(raw, d); err != nil {
			return nil, Tip{}, fmt.Errorf("ledger: the lock's rows as read in one call: %w", err)
		}
		at = d
	}
	var t Tip
	if head && at.Head != nil {
		h := at.Head
		t = Tip{seq: h.Seq, updated: h.Updated, hashed: h.Hashed, hash: h.Hash, read: true}
		for _, r := range at.Tree {
			known[r.Seq] = r.Hashes
		}
	}
	b.on, b.read, b.lock, b.since = true, d, name, since
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
