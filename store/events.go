package store

// The reads of the event log that replay folds and verify checks. Each is
// an iterator over rows in seq order; replay decodes and folds them and
// names no SQL itself.

import (
	"context"
	"database/sql"
	"errors"
	"iter"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/lockledger/lockledger/events"
)

// Filter selects events. Zero fields do not filter.
type Filter struct {
	Lock  string
	Actor string
	Types []events.Type
	Since time.Time // at >= Since
	Until time.Time // at <= Until
	// FromSeq and ToSeq bound seq (inclusive).
	FromSeq, ToSeq int64
	// Last keeps only the last Last events of those the rest selects
	// (0: all of them), still in seq order: a page of the newest.
	Last int
}

// Every filter is served by an index, the only one its conditions leave
// usable (see query), so that the plan cannot fall back to a full scan in
// seq order on a large log: events_lock_seq for a lock (its rows in seq
// order, a seq range of them for a window or a fold from a snapshot), the
// primary key for a seq range bounded at both ends, events_actor_at for
// an actor, events_type_at for types, events_at for a time window alone.
// The matching rows are then in seq order, the order of the log, or
// sorted into it; TestQueryPlans pins these plans.
func (f Filter) query(cols string) (string, []any) {
	timed := !f.Since.IsZero() || !f.Until.IsZero()
	index := ""
	switch {
	case f.Lock != "":
		index = "lock_name"
	case f.FromSeq > 0 && f.ToSeq > 0:
		// A bounded seq range (a fold from a snapshot): the rows between,
		// whatever else selects among them.
		index = "seq"
	case f.Actor != "":
		index = "actor"
	case len(f.Types) > 0:
		index = "type"
	case timed && f.FromSeq == 0 && f.ToSeq == 0:
		index = "at"
	}
	var b binds
	var where []string
	if f.Lock != "" {
		where = append(where, column("lock_name", index)+" = "+b.bind(f.Lock))
	}
	if f.Actor != "" {
		where = append(where, column("actor", index)+" = "+b.bind(f.Actor))
	}
	if len(f.Types) > 0 {
		marks := make([]string, len(f.Types))
		for i, t := range f.Types {
			marks[i] = b.bind(string(t))
		}
		where = append(where, column("type", index)+" IN ("+strings.Join(marks, ",")+")")
	}
	if !f.Since.IsZero() {
		where = append(where, column("at", index)+" >= "+b.bind(events.FormatTime(f.Since)))
	}
	if !f.Until.IsZero() {
		where = append(where, column("at", index)+" <= "+b.bind(events.FormatTime(f.Until)))
	}
	if f.FromSeq > 0 {
		where = append(where, column("seq", index)+" >= "+b.bind(f.FromSeq))
	}
	if f.ToSeq > 0 {
		where = append(where, column("seq", index)+" <= "+b.bind(f.ToSeq))
	}
	q := "SELECT " + cols + " FROM events"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + " ORDER BY " + column("seq", index), b.args
}

// column names column c in a condition of a query served by the index
// whose first column is index ("" for none): as it is where that index
// serves the condition (at is the second column of the actor's and the
// type's index, seq that of the lock's), else as an expression no index
// serves (|| ” for text, + for seq), so that the planner of either engine
// picks that index.
func column(c, index string) string {
	switch {
	case index == "" || c == index:
		return c
	case c == "at" && index != "seq" && index != "lock_name":
		return c
	case c == "seq" && index == "lock_name":
		return c
	case c == "seq":
		return "+seq"
	}
	return c + " || ''"
}

// binds are a query's arguments, bound to $1, $2, ... in order.
type binds struct{ args []any }

// bind adds v and returns its placeholder.
func (b *binds) bind(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// narrow turns a time window alone, or one lock's, into the seq range that
// covers it, so that the scan walks the table or the lock's index in seq
// order without sorting (the window is still applied to every row: an
// event with a skewed clock inside the range is not let through).
func (f Filter) narrow(ctx context.Context, q Querier) (Filter, bool, error) {
	timed := !f.Since.IsZero() || !f.Until.IsZero()
	if !timed || (f.Lock == "" && (f.Actor != "" || len(f.Types) > 0)) || (f.FromSeq != 0 && f.ToSeq != 0) {
		return f, true, nil
	}
	from, to, ok, err := SeqRange(ctx, q, f.Since, f.Until)
	f.FromSeq = max(f.FromSeq, from)
	if f.ToSeq == 0 || to < f.ToSeq {
		f.ToSeq = to
	}
	return f, ok && f.FromSeq <= f.ToSeq, err
}

// page narrows f to its last f.Last events: from the seq of the Last-th
// newest it selects (through the same index, walked backwards).
func (f Filter) page(ctx context.Context, q Querier) (Filter, error) {
	if f.Last <= 0 {
		return f, nil
	}
	query, args := f.query("seq")
	var seq int64
	err := q.QueryRowContext(ctx, query+" DESC LIMIT 1 OFFSET "+strconv.Itoa(f.Last-1), args...).Scan(&seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return f, nil // fewer than Last: all of them
	case err != nil:
		return f, err
	}
	f.FromSeq = max(f.FromSeq, seq)
	return f, nil
}

// SeqRange returns the contiguous seq range that covers every event with
// since <= at <= until (zero bounds are open): from the first such event to
// the last. Events inside the range whose clocks disagree are included, so
// that the range chains. ok is false when no event matches.
//
// The clocks that dated the events may have stepped back, so neither end
// follows from the order of at alone: each is searched in the log itself,
// only where the snapshots' bounds leave it (see firstSeqAtOrAfter and
// lastSeqAtOrBefore), so that it costs a block of events, not the history
// before or after the instant.
func SeqRange(ctx context.Context, q Querier, since, until time.Time) (from, to int64, ok bool, err error) {
	var first, head sql.NullInt64
	// Each end a query of its own: SQLite reads one end of the primary key
	// for a lone min or max, but walks the whole index for both at once.
	if err := q.QueryRowContext(ctx, `SELECT (SELECT min(seq) FROM events), (SELECT max(seq) FROM events)`).Scan(&first, &head); err != nil || !first.Valid {
		return 0, 0, false, err
	}
	from, to = first.Int64, head.Int64
	if since.IsZero() && until.IsZero() {
		return from, to, true, nil
	}
	bounds, err := snapshotBounds(ctx, q, from)
	if err != nil {
		return 0, 0, false, err
	}
	if !since.IsZero() {
		if from, ok, err = firstSeqAtOrAfter(ctx, q, bounds, events.FormatTime(since)); err != nil || !ok {
			return 0, 0, false, err
		}
	}
	if !until.IsZero() {
		if to, ok, err = lastSeqAtOrBefore(ctx, q, bounds, head.Int64, events.FormatTime(until)); err != nil || !ok {
			return 0, 0, false, err
		}
	}
	return from, to, from <= to, nil
}

// snapshotBound is what bounds the search of one snapshot's events: every
// event up to seq is at or before maxAt, and the earliest of its block
// (after seq - SnapshotEvery) is at minAt ("" where not known).
type snapshotBound struct {
	seq                     int64
	eventHash, maxAt, minAt string
}

// snapshotBounds are the bounds of the snapshots of the fold from the live
// log's first event, in seq order, read from their index alone; none when
// the newest does not follow an event that still has the hash it recorded.
// That one hash vouches for the events under every earlier snapshot too,
// each event's hash covering the one before it (which verify checks), so
// that a reader trusts the bounds as it trusts a state (they are not in
// the state's hash; verify recomputes them).
func snapshotBounds(ctx context.Context, q Querier, first int64) ([]snapshotBound, error) {
	bounds, err := QueryAll(ctx, q, func(rows *sql.Rows, b *snapshotBound) error {
		return rows.Scan(&b.seq, &b.eventHash, &b.maxAt, &b.minAt)
	}, `SELECT seq, event_hash, max_at, coalesce(min_at, '') FROM snapshots WHERE from_seq = $1 ORDER BY seq`, first)
	if err != nil || len(bounds) == 0 {
		return nil, err
	}
	newest := bounds[len(bounds)-1]
	if h, err := EventHash(ctx, q, newest.seq); err != nil || h != newest.eventHash {
		return nil, err
	}
	return bounds, nil
}

// firstSeqAtOrAfter is the first seq whose at is at or after t. Every
// event up to a snapshot whose maxAt is before t is before t, and maxAt
// never decreases with seq: the first is after the last such snapshot.
// When a later snapshot's events reach t, the first is at or before it,
// so its at is at most that snapshot's maxAt: events_at is walked between
// the two times only (the events dated in that span, a block's worth when
// the clocks went forward); else the log is walked from there.
func firstSeqAtOrAfter(ctx context.Context, q Querier, bounds []snapshotBound, t string) (int64, bool, error) {
	var after int64
	for _, b := range bounds {
		if b.maxAt >= t {
			var seq sql.NullInt64
			err := q.QueryRowContext(ctx, `SELECT min(+seq) FROM events WHERE at >= $1 AND at <= $2 AND +seq > $3`, t, b.maxAt, after).Scan(&seq)
			return seq.Int64, seq.Valid, err
		}
		after = b.seq
	}
	var seq sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT seq FROM events WHERE seq > $1 AND at || '' >= $2 ORDER BY seq LIMIT 1`, after, t).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return seq.Int64, err == nil, err
}

// lastSeqAtOrBefore is the last seq whose at is at or before t, head being
// the log's last. It searches the events after the newest snapshot, then
// each snapshot's block from the newest back whose earliest at is at or
// before t (a block later than t holds none), stopping at the first found;
// below a block whose bounds are not known (or below the oldest), every
// event at or before t is searched through events_at, which at that point
// costs the events before that block.
func lastSeqAtOrBefore(ctx context.Context, q Querier, bounds []snapshotBound, head int64, t string) (int64, bool, error) {
	var seq int64
	last := func(lo, hi int64) (bool, error) {
		err := q.QueryRowContext(ctx, `SELECT seq FROM events WHERE seq > $1 AND seq <= $2 AND at || '' <= $3 ORDER BY seq DESC LIMIT 1`,
			lo, hi, t).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	}
	hi := head // no event after hi is at or before t
	for i := len(bounds) - 1; i >= 0; i-- {
		b := bounds[i]
		if b.seq < hi { // events no stored block covers
			if found, err := last(b.seq, hi); found || err != nil {
				return seq, found, err
			}
			hi = b.seq
		}
		if b.minAt == "" || b.seq > hi {
			break
		}
		lo := b.seq - SnapshotEvery
		if b.minAt <= t {
			if found, err := last(lo, b.seq); found || err != nil {
				return seq, found, err
			}
		}
		hi = lo
	}
	var max sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT max(+seq) FROM events WHERE at <= $1 AND +seq <= $2`, t, hi).Scan(&max)
	return max.Int64, max.Valid, err
}

// EventRow is an event's row as the log stores it. An iterator hands the
// same EventRow over for every row: its fields are valid until the next
// one, but Body is the caller's to keep.
type EventRow struct {
	Seq      int64
	Type     string // PruneMarkers and HoldingEvents only
	Body     []byte
	PrevHash string // Events only
	Hash     string // Events only
}

// rowsOf yields each row of the rows run returns, scanned by scan into
// one T that every row reuses.
func rowsOf[T any](run func() (*sql.Rows, error), scan func(*sql.Rows, *T) error) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		rows, err := run()
		if err != nil || rows == nil {
			if err != nil {
				yield(nil, err)
			}
			return
		}
		defer rows.Close()
		var r T
		for rows.Next() {
			if err := scan(rows, &r); err != nil {
				yield(nil, err)
				return
			}
			if !yield(&r, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// QueryAll runs query through q and scans each row into a T of its own.
func QueryAll[T any](ctx context.Context, q Querier, scan func(*sql.Rows, *T) error, query string, args ...any) ([]T, error) {
	var out []T
	for r, err := range rowsOf(func() (*sql.Rows, error) { return q.QueryContext(ctx, query, args...) }, scan) {
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// ScanOne scans a row of one column.
func ScanOne[T any](rows *sql.Rows, v *T) error { return rows.Scan(v) }

// filtered yields the rows f selects, in seq order (none when f's time
// window holds no event): seq, body and the chain links, or with text
// only seq and the body as text (see Bodies).
func filtered[T any](ctx context.Context, q Querier, f Filter, text bool, scan func(*sql.Rows, *T) error) iter.Seq2[*T, error] {
	return rowsOf(func() (*sql.Rows, error) {
		f, any, err := f.narrow(ctx, q)
		if err != nil || !any {
			return nil, err
		}
		if f, err = f.page(ctx, q); err != nil {
			return nil, err
		}
		cols := "seq, body, prev_hash, hash"
		if text {
			cols = "seq, body || ''"
		}
		query, args := f.query(cols)
		return q.QueryContext(ctx, query, args...)
	}, scan)
}

// Events yields the rows f selects, in seq order: seq, body and the chain
// links, the bodies undecoded.
func Events(ctx context.Context, q Querier, f Filter) iter.Seq2[*EventRow, error] {
	return filtered(ctx, q, f, false, func(rows *sql.Rows, r *EventRow) error {
		return rows.Scan(&r.Seq, &r.Body, &r.PrevHash, &r.Hash)
	})
}

// BodyRow is what a fold reads of a row (Bodies hands the same one over
// for every row). The body is a string: the driver
// hands a text column over in a string of its own, which database/sql
// passes on without the copy it makes of a byte slice, and which the
// fold's strings may share for as long as they live.
type BodyRow struct {
	Seq  int64
	Body string // a NULL body reads as "", which does not decode
}

// Bodies yields the seq and body of each row f selects, in seq order. The
// body is concatenated with an empty string: in SQLite that makes it text
// with the same bytes, NULs included, as the ledger's database is UTF-8
// (store/sqlite opens no other); in PostgreSQL it stays bytea, which
// database/sql copies into the string as before.
func Bodies(ctx context.Context, q Querier, f Filter) iter.Seq2[*BodyRow, error] {
	var body sql.NullString
	return filtered(ctx, q, f, true, func(rows *sql.Rows, r *BodyRow) error {
		err := rows.Scan(&r.Seq, &body)
		r.Body = body.String
		return err
	})
}

// PruneMarkers yields the ledger_pruned and ledger_unpruned events (seq,
// type and body), in seq order.
func PruneMarkers(ctx context.Context, q Querier) iter.Seq2[*EventRow, error] {
	return rowsOf(func() (*sql.Rows, error) {
		return q.QueryContext(ctx, `SELECT seq, type, body FROM events WHERE type IN ('ledger_pruned', 'ledger_unpruned') ORDER BY seq`)
	}, scanSeqTypeBody)
}

// HoldingEvents yields requestID's events on lock that take, renew or
// free a holding (seq, type and body), newest first.
func HoldingEvents(ctx context.Context, q Querier, lock, requestID string) iter.Seq2[*EventRow, error] {
	return rowsOf(func() (*sql.Rows, error) {
		return q.QueryContext(ctx, `SELECT seq, type, body FROM events WHERE request_id = $1 AND lock_name = $2
		AND type IN ('lock_acquired', 'lock_stolen', 'lock_heartbeat', 'lock_released') ORDER BY seq DESC`, requestID, lock)
	}, scanSeqTypeBody)
}

func scanSeqTypeBody(rows *sql.Rows, r *EventRow) error { return rows.Scan(&r.Seq, &r.Type, &r.Body) }

// HoldingEnds yields lock's releases and steals after seq (the body
// only), in seq order: the events that may end the holding taken at seq.
func HoldingEnds(ctx context.Context, q Querier, lock string, seq int64) iter.Seq2[*EventRow, error] {
	return rowsOf(func() (*sql.Rows, error) {
		return q.QueryContext(ctx, `SELECT body FROM events WHERE lock_name = $1 AND seq > $2
		AND type IN ('lock_released', 'lock_stolen') ORDER BY seq`, lock, seq)
	}, func(rows *sql.Rows, r *EventRow) error { return rows.Scan(&r.Body) })
}

// CreatedAt reads the ledger's created_at from the meta table; ok is
// false when there is none.
func CreatedAt(ctx context.Context, q Querier) (v string, ok bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'created_at'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return v, err == nil, err
}

// TreeRowsAfter counts the stored Merkle rows past seq, and names the
// first (0: none).
func TreeRowsAfter(ctx context.Context, q Querier, seq int64) (count, first int64, err error) {
	var n, f sql.NullInt64
	err = q.QueryRowContext(ctx, `SELECT count(*), min(seq) FROM tlog_hashes WHERE seq > $1`, seq).Scan(&n, &f)
	return n.Int64, f.Int64, err
}

// Columns are the events table's columns that duplicate body fields for
// the indexes.
type Columns struct {
	EventID, Type, LockName, RequestID, Actor, At string
}

// ChainRow is a row as verify checks it: the chain links, the indexed
// columns, and the event's stored Merkle hashes. ChainRowsAfter hands the same
// ChainRow over for every row; Body and Stored point into a string the
// driver made for that row alone, so they stay valid after it (read only).
type ChainRow struct {
	Seq      int64
	Body     []byte // nil for NULL
	PrevHash string
	Hash     string
	Cols     Columns
	Stored   []byte // the row of table tlog_hashes, nil when it has none
}

// sepSQL is the unit separator as an SQL string literal, in both dialects.
const sepSQL = "'\x1f'"

// chainQuery reads every row in seq order, with its stored Merkle hashes
// (NULL when it has none). The six indexed columns come joined by a unit
// separator (0x1F) into one value: reading one column instead of six is
// most of the difference between verify's reads and a plain scan of seq,
// body and the hashes. SQLite's || keeps every byte of a TEXT or BLOB value
// (the columns hold no numbers: TEXT affinity), and a NULL makes the whole
// value NULL, which Scan refuses as it refuses a NULL column into a string.
// The body and the stored hashes are concatenated with an empty string for
// the same reason as a fold's body (Bodies): text in SQLite, which reaches
// the row without a copy (textBytes).
const chainQuery = `SELECT e.seq, e.body || '', e.prev_hash, e.hash,
	e.event_id || ` + sepSQL + ` || e.type || ` + sepSQL + ` || e.lock_name || ` + sepSQL + ` || e.request_id || ` + sepSQL + ` || e.actor || ` + sepSQL + ` || e.at AS cols,
	t.hashes || ''
	FROM events e LEFT JOIN tlog_hashes t ON t.seq = e.seq WHERE e.seq > $1 ORDER BY e.seq`

// ChainRowsAfter yields the rows of the log after seq, in seq order (see
// ChainRow): every row from seq 0.
func ChainRowsAfter(ctx context.Context, q Querier, seq int64) iter.Seq2[*ChainRow, error] {
	var joined string
	var body, stored sql.NullString
	return rowsOf(func() (*sql.Rows, error) { return q.QueryContext(ctx, chainQuery, seq) }, func(rows *sql.Rows, r *ChainRow) error {
		if err := rows.Scan(&r.Seq, &body, &r.PrevHash, &r.Hash, &joined, &stored); err != nil {
			return err
		}
		r.Body, r.Stored = textBytes(body), textBytes(stored)
		if splitColumns(joined, &r.Cols) {
			return nil
		}
		// A column holds the separator: read them one by one.
		c := &r.Cols
		if err := q.QueryRowContext(ctx, `SELECT event_id, type, lock_name, request_id, actor, at FROM events WHERE seq = $1`,
			r.Seq).Scan(&c.EventID, &c.Type, &c.LockName, &c.RequestID, &c.Actor, &c.At); err != nil {
			return &SeqError{Seq: r.Seq, Err: err}
		}
		return nil
	})
}

// SeqError is a failure to read the row of event Seq.
type SeqError struct {
	Seq int64
	Err error
}

func (e *SeqError) Error() string {
	return "seq " + strconv.FormatInt(e.Seq, 10) + ": " + e.Err.Error()
}
func (e *SeqError) Unwrap() error { return e.Err }

// textBytes is the bytes of a value read as text, without a copy (the
// driver made the string for this row, and its reader only reads the
// bytes): nil for NULL, empty but not nil for an empty value.
func textBytes(s sql.NullString) []byte {
	switch {
	case !s.Valid:
		return nil
	case s.String == "":
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s.String), len(s.String))
}

// splitColumns splits chainQuery's joined columns. The split is exact
// when the value holds exactly the five separators the query put in it;
// otherwise (a column holds 0x1F itself) it reports false and the caller
// reads the columns one by one.
func splitColumns(joined string, c *Columns) bool {
	if strings.Count(joined, "\x1f") != 5 {
		return false
	}
	var rest string
	c.EventID, rest, _ = strings.Cut(joined, "\x1f")
	c.Type, rest, _ = strings.Cut(rest, "\x1f")
	c.LockName, rest, _ = strings.Cut(rest, "\x1f")
	c.RequestID, rest, _ = strings.Cut(rest, "\x1f")
	c.Actor, c.At, _ = strings.Cut(rest, "\x1f")
	return true
}
