package replay

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
)

// Querier is what the queries need; *sql.DB, *sql.Tx and *sql.Conn all
// satisfy it. Use a read-only transaction (sql.TxOptions{ReadOnly: true})
// when several queries must see one snapshot.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Filter selects events. Zero fields do not filter.
type Filter struct {
	Lock  string
	Actor string
	Types []events.Type
	Since time.Time // at >= Since
	Until time.Time // at <= Until
	// FromSeq and ToSeq bound seq (inclusive).
	FromSeq, ToSeq int64
}

// ErrStop ends a Scan early without an error.
var ErrStop = errors.New("replay: stop")

// The queries below are the one place in replay that writes SQL, in the
// dialect SQLite and PostgreSQL share. Every filter is served by an index
// of migrations/0001_init.sql, the only one its conditions leave usable
// (see query), so that the plan cannot fall back to a full scan in seq
// order on a large log: events_lock_at for a lock,
// events_actor_at for an actor, events_type_at for types, events_at for a
// time window alone. The matching rows are then sorted by seq, the order of
// the log; TestQueryPlans pins these plans.
func (f Filter) query(cols string) (string, []any) {
	timed := !f.Since.IsZero() || !f.Until.IsZero()
	index := ""
	switch {
	case f.Lock != "":
		index = "lock_name"
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
// serves the condition (at is the second column of every index), else as
// an expression no index serves (|| ” for text, + for seq), so that the
// planner of either engine picks that index.
func column(c, index string) string {
	switch {
	case index == "" || c == index || c == "at":
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

const eventCols = "seq, body, prev_hash, hash"

// Scan streams the events that f selects, in seq order, to fn, decoded.
// fn may return ErrStop to end the scan. A body that does not decode is an
// error that names its seq (verify tells what happened to it).
func Scan(ctx context.Context, q Querier, f Filter, fn func(*Event) error) error {
	return ScanRows(ctx, q, f, func(r *Row) error {
		ev, err := DecodeEvent(r.Seq, r.Body)
		if err != nil {
			return err
		}
		ev.Seq, ev.PrevHash, ev.Hash = r.Seq, r.PrevHash, r.Hash
		return fn(ev)
	})
}

// narrow turns a time window alone into the seq range that covers it, so
// that the scan walks the table in seq order without sorting (the window
// is still applied to every row: an event with a skewed clock inside the
// range is not let through).
func (f Filter) narrow(ctx context.Context, q Querier) (Filter, bool, error) {
	timed := !f.Since.IsZero() || !f.Until.IsZero()
	if !timed || f.Lock != "" || f.Actor != "" || len(f.Types) > 0 || f.FromSeq != 0 || f.ToSeq != 0 {
		return f, true, nil
	}
	from, to, ok, err := SeqRange(ctx, q, f.Since, f.Until)
	f.FromSeq, f.ToSeq = from, to
	return f, ok, err
}

// The first and last seq in a time window, from events_at: +seq keeps the
// planner from walking the primary key for min or max instead.
const (
	lastSeqQuery  = `SELECT max(+seq) FROM events WHERE at <= $1`
	firstSeqQuery = `SELECT min(+seq) FROM events WHERE at >= $1`
)

// lastSeqAtOrBefore is the highest seq whose at <= t, 0 if none.
func lastSeqAtOrBefore(ctx context.Context, q Querier, t time.Time) (int64, error) {
	var seq sql.NullInt64
	err := q.QueryRowContext(ctx, lastSeqQuery,
		events.FormatTime(t)).Scan(&seq)
	return seq.Int64, err
}

// SeqRange returns the contiguous seq range that covers every event with
// since <= at <= until (zero bounds are open): from the first such event to
// the last. Events inside the range whose clocks disagree are included, so
// that the range chains. ok is false when no event matches.
func SeqRange(ctx context.Context, q Querier, since, until time.Time) (from, to int64, ok bool, err error) {
	var lo, hi sql.NullInt64
	if since.IsZero() {
		err = q.QueryRowContext(ctx, `SELECT min(seq) FROM events`).Scan(&lo)
	} else {
		err = q.QueryRowContext(ctx, firstSeqQuery,
			events.FormatTime(since)).Scan(&lo)
	}
	if err != nil {
		return 0, 0, false, err
	}
	if until.IsZero() {
		err = q.QueryRowContext(ctx, `SELECT max(seq) FROM events`).Scan(&hi)
	} else {
		hi.Int64, err = lastSeqAtOrBefore(ctx, q, until)
		hi.Valid = hi.Int64 > 0
	}
	if err != nil {
		return 0, 0, false, err
	}
	if !lo.Valid || !hi.Valid || lo.Int64 > hi.Int64 {
		return 0, 0, false, nil
	}
	return lo.Int64, hi.Int64, true, nil
}

// ScanRows streams the rows f selects, in seq order, without decoding the
// bodies: export copies a damaged ledger faithfully, for verify to judge.
func ScanRows(ctx context.Context, q Querier, f Filter, fn func(*Row) error) error {
	f, any, err := f.narrow(ctx, q)
	if err != nil || !any {
		return err
	}
	query, args := f.query(eventCols)
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r := &Row{}
		if err := rows.Scan(&r.Seq, &r.Body, &r.PrevHash, &r.Hash); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return rows.Err()
}
