package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// The ledger's tables, read and written in the SQL both engines speak:
// the locks projection (one row per lock exclusively held at least once:
// its last exclusive holding's file), the events, and their stored Merkle
// hashes. Holders are lock_holders' rows (holders.go).

// Errors the head of the log reports; package ledger re-exports them.
var (
	// ErrTruncated: the log's tail is gone (the locks table records events
	// past its end); writers append nothing until project accepts it.
	ErrTruncated = errors.New("event log truncated")
	// ErrUnhashed: events follow the last one with stored Merkle hashes on
	// a ledger that keeps them: appended by something other than
	// lockledger. Writers append nothing (a checkpoint would sign them)
	// until project --accept-broken-chain accepts them (recorded).
	ErrUnhashed = errors.New("events without stored Merkle hashes")
)

// Row is a lock's exclusive side as the write path reads it: the lock's
// own row of the locks table (the last exclusive holding's request id,
// host, fencing token, targets and lock file, and the seq that last wrote
// them) joined with its exclusive holder's row of lock_holders, when it
// has one (Held). A free lock's holder columns are zero: only its locks
// row is left, which tells a leftover lock file of ours from another's.
//
// The holder's columns are a HolderRow's (its slot limit and exclusive
// flag unset); the lock's own are its Name, RequestID, HostID,
// FencingToken, UpdatedSeq and Targets.
type Row struct {
	HolderRow
	Held bool
	File []byte
}

// LockColumns are the locks table's: what a lock keeps of its last
// exclusive holding whether or not it still holds.
const LockColumns = `lock_name, request_id, host_id, fencing_token, updated_seq, file, targets`

// rowColumns read a Row: the locks row l joined with its exclusive
// holder's row h (fromRow). The lock's own columns are l's (a holding
// writes the same request, host, token and targets to both); whether it
// is held, and the holder's other columns, are h's. Any exclusive row
// makes the lock held, whatever l names, so that a damaged pair is still
// refused to others (verify names it).
const rowColumns = `l.lock_name, CASE WHEN h.request_id IS NULL THEN 0 ELSE 1 END, l.request_id,
	coalesce(h.actor, ''), coalesce(h.intent, ''), coalesce(h.intent_version, ''), l.host_id,
	coalesce(h.pid, 0), coalesce(h.pid_start, ''), coalesce(h.boot_id, ''), coalesce(h.created_at, ''),
	coalesce(h.heartbeat_at, ''), coalesce(h.ttl_seconds, 0), coalesce(h.metadata, ''),
	l.fencing_token, l.updated_seq, l.file, l.targets, h.pid_ns`

const fromRow = ` FROM locks l LEFT JOIN lock_holders h ON h.lock_name = l.lock_name AND h.exclusive = 1`

// Scanner is a *sql.Row or *sql.Rows.
type Scanner interface{ Scan(dest ...any) error }

// scanRow scans rowColumns, then the columns after them into more.
func scanRow(s Scanner, more ...any) (*Row, error) {
	var r Row
	var held int
	if err := s.Scan(append([]any{&r.Name, &held, &r.RequestID, &r.Actor, &r.Intent, &r.IntentVersion, &r.HostID, &r.PID,
		&r.PIDStart, &r.BootID, &r.CreatedAt, &r.HeartbeatAt, &r.TTLSeconds, &r.Metadata, &r.FencingToken,
		&r.UpdatedSeq, &r.File, &r.Targets, &r.PIDNS}, more...)...); err != nil {
		return nil, err
	}
	r.Held = held != 0
	return &r, nil
}

func LoadRow(ctx context.Context, q Querier, name string) (*Row, error) {
	r, err := scanRow(q.QueryRowContext(ctx, `SELECT `+rowColumns+fromRow+` WHERE l.lock_name = $1`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

func LoadRows(ctx context.Context, q Querier) ([]*Row, error) {
	return QueryAll(ctx, q, func(rs *sql.Rows, r **Row) (err error) {
		*r, err = scanRow(rs)
		return err
	}, `SELECT `+rowColumns+fromRow+` ORDER BY l.lock_name, h.request_id`)
}

// SaveRow writes r's locks row: the lock's own columns. Its holder, when
// it holds, is a row of lock_holders (SaveHolder).
func SaveRow(ctx context.Context, tx Execer, r *Row) error {
	if b := batchOf(tx); b != nil {
		b.add(r.Name, func(w *decisionWrites) {
			w.Rows = append(w.Rows, lockJSON{"save_row", r.Name, r.RequestID, r.HostID, r.FencingToken, r.UpdatedSeq, byteaText(r.File), r.TargetsJSON()})
		})
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO locks (`+LockColumns+`) VALUES ($1,$2,$3,$4,$5,$6,$7)
		ON CONFLICT (lock_name) DO UPDATE SET request_id=excluded.request_id, host_id=excluded.host_id,
		fencing_token=excluded.fencing_token, updated_seq=excluded.updated_seq, file=excluded.file, targets=excluded.targets`,
		r.Name, r.RequestID, r.HostID, r.FencingToken, r.UpdatedSeq, r.File, r.TargetsJSON())
	return err
}

// Head returns the last seq and hash, or 0 and genesis for an empty log.
// Head is the last event's seq and hash (0 and the genesis when there is
// none). It refuses a log whose tail is gone, as the locks table shows it
// (a row updated by a seq past the last event: see truncation): appending
// there would reuse the missing seqs, fencing tokens included, and hide the cut.
// It also refuses events past the last one with stored Merkle hashes (the
// writing open computes them only for a ledger from before the tree): they
// were appended by something other than lockledger, and the next checkpoint
// would sign them.
func Head(ctx context.Context, q Querier, genesis string) (int64, string, error) {
	var t Tip
	if err := q.QueryRowContext(ctx, `SELECT `+tipColumns).Scan(&t.seq, &t.hash, &t.updated, &t.hashed); err != nil {
		return 0, "", err
	}
	return t.check(genesis)
}

// tipColumns are what Head reads: the last event's seq and hash, the
// largest seq the locks and shared holders record, the last event with
// stored Merkle hashes.
const tipColumns = `coalesce((SELECT seq FROM events ORDER BY seq DESC LIMIT 1), 0),
		coalesce((SELECT hash FROM events ORDER BY seq DESC LIMIT 1), ''),
		coalesce((SELECT max(u) FROM (SELECT max(updated_seq) AS u FROM locks
			UNION ALL SELECT max(updated_seq) FROM lock_holders) AS t), 0),
		coalesce((SELECT max(seq) FROM tlog_hashes), 0)`

// Tip is the head of the log as a write read it with a lock's row
// (LoadRowTip), for Head to check when the write first needs it.
type Tip struct {
	seq, updated, hashed int64
	hash                 string
	read                 bool
}

// LoadRowTip is LoadRow and the head of the log in one statement: the
// lock's row, its exclusive holder and the head are read together when the
// lock has a row (the zero Tip, read by
// Head, when it has none).
func LoadRowTip(ctx context.Context, q Querier, name string) (*Row, Tip, error) {
	var t Tip
	r, err := scanRow(q.QueryRowContext(ctx, `SELECT `+rowColumns+`, `+tipColumns+fromRow+` WHERE l.lock_name = $1`, name),
		&t.seq, &t.hash, &t.updated, &t.hashed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Tip{}, nil
	}
	t.read = err == nil
	return r, t, err
}

// Head is the head t read, checked as Head checks it; read through q when
// t holds none.
func (t Tip) Head(ctx context.Context, q Querier, genesis string) (int64, string, error) {
	if !t.read {
		return Head(ctx, q, genesis)
	}
	return t.check(genesis)
}

func (t Tip) check(genesis string) (int64, string, error) {
	seq, hash, updated, hashed := t.seq, t.hash, t.updated, t.hashed
	if updated > seq {
		return 0, "", fmt.Errorf("%w: the log ends at seq %d, but the locks table records seq %d: events are missing; "+
			"nothing is appended until `lockledger verify` is read and `lockledger project --accept-broken-chain` accepts the cut (recorded)",
			ErrTruncated, seq, updated)
	}
	if hashed < seq {
		return 0, "", fmt.Errorf("%w: seq %d is the first event without them (the log ends at seq %d): appended by something "+
			"other than lockledger; nothing is appended until `lockledger verify` is read and "+
			"`lockledger project --accept-broken-chain` accepts them (recorded)", ErrUnhashed, hashed+1, seq)
	}
	if seq == 0 {
		return 0, genesis, nil
	}
	return seq, hash, nil
}

func InsertEvent(ctx context.Context, tx Execer, seq int64, eventID, typ, lock, requestID, actor, at string, body []byte, prev, hash string) error {
	if b := batchOf(tx); b != nil {
		b.add(lock, func(w *decisionWrites) {
			w.Events = append(w.Events, eventJSON{seq, eventID, typ, lock, requestID, actor, at, byteaText(body), prev, hash})
		})
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`, seq, eventID, typ, lock, requestID, actor, at, body, prev, hash)
	return err
}

// EventBody reads the body of event seq when its request id is
// requestID; nil when the live log has no such event (never written, or
// archived by a prune).
func EventBody(ctx context.Context, q Querier, seq int64, requestID string) ([]byte, error) {
	if b, ok := batchOf(q).readAcquired(seq, requestID); ok {
		return b, nil
	}
	var b []byte
	err := q.QueryRowContext(ctx, `SELECT body FROM events WHERE seq = $1 AND request_id = $2`, seq, requestID).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

// ReadTreeRow reads the stored Merkle hashes of event seq; nil when there
// are none.
func ReadTreeRow(ctx context.Context, q Querier, seq int64) ([]byte, error) {
	var b []byte
	err := q.QueryRowContext(ctx, `SELECT hashes FROM tlog_hashes WHERE seq = $1`, seq).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

// treeRowsAtOnce is how many rows ReadTreeRows asks for in one statement.
// Measured on SQLite inside a write transaction: one row by its seq 2.9
// µs, up to 8 by IN 6.8 µs, up to 16 8.7 µs.
const treeRowsAtOnce = 8

// readTreeRows is one statement for up to treeRowsAtOnce rows: unused
// placeholders are given seq 0, which no event has.
const readTreeRows = `SELECT seq, hashes FROM tlog_hashes WHERE seq IN ($1, $2, $3, $4, $5, $6, $7, $8)`

// ReadTreeRows reads the stored Merkle hashes of the events seqs, one
// statement for every treeRowsAtOnce of them (a row by itself where only
// one or two are left); an event with none is not in the map.
func ReadTreeRows(ctx context.Context, q Querier, seqs []int64) (map[int64][]byte, error) {
	out := make(map[int64][]byte, len(seqs))
	for chunk := range slices.Chunk(seqs, treeRowsAtOnce) {
		if len(chunk) <= 2 {
			for _, seq := range chunk {
				b, err := ReadTreeRow(ctx, q, seq)
				if err != nil {
					return nil, err
				}
				if b != nil {
					out[seq] = b
				}
			}
			continue
		}
		args := make([]any, treeRowsAtOnce)
		for i := range args {
			args[i] = int64(0)
			if i < len(chunk) {
				args[i] = chunk[i]
			}
		}
		rows := rowsOf(func() (*sql.Rows, error) { return q.QueryContext(ctx, readTreeRows, args...) },
			func(rows *sql.Rows, r *EventRow) error { return rows.Scan(&r.Seq, &r.Body) })
		for r, err := range rows {
			if err != nil {
				return nil, err
			}
			out[r.Seq] = r.Body
		}
	}
	return out, nil
}

func InsertTreeRow(ctx context.Context, tx Execer, seq int64, hashes []byte) error {
	if b := batchOf(tx); b != nil {
		b.add("", func(w *decisionWrites) { w.Tree = append(w.Tree, treeJSON{seq, byteaText(hashes)}) })
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO tlog_hashes (seq, hashes) VALUES ($1, $2)`, seq, hashes)
	return err
}
