package ledger

// SQLite specifics live in this file: the DSN and its pragmas, the busy
// error, and the statements; postgres.go holds PostgreSQL's.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// row is one line of the locks projection table (exclusive holders; shared
// holders are lock_holders' rows, see shared.go).
type row struct {
	name          string
	held          bool
	requestID     string
	actor         string
	intent        string
	intentVersion string
	hostID        string
	pid           int
	pidStart      string
	bootID        string
	createdAt     string
	heartbeatAt   string
	ttlSeconds    int64
	metadata      string
	fencingToken  int64
	updatedSeq    int64
	file          []byte
	targets       string // JSON array of events.Target
}

func (r *row) targetsJSON() string {
	if r.targets == "" {
		return "[]"
	}
	return r.targets
}

const rowColumns = `lock_name, held, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
	created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, updated_seq, file, targets`

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

type scanner interface{ Scan(dest ...any) error }

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// preparedTx runs a write transaction's statements through statements the
// ledger prepares once on the pool, which database/sql keeps prepared per
// connection, so that the write path does not parse the same SQL again on
// every call. A statement not prepared yet runs through the transaction as
// SQL and is prepared before the next write begins (sqliteStore.begin):
// preparing it on the pool now, while the transaction holds the pool's only
// connection, would open a second one (its settings applied, the schema
// parsed and the WAL opened again).
type preparedTx struct {
	l  *Ledger
	tx *sql.Tx
}

// errUnprepared: the statement runs through the transaction as SQL.
var errUnprepared = errors.New("ledger: statement not prepared yet")

// PrepareContext is query as a statement of tx, from the statement prepared
// on the pool. It fails with errUnprepared where the statement runs through
// tx as SQL: one not prepared yet (it is noted, for preparePending), or a
// driver that caches statements per connection itself (pgx; a statement
// prepared on the transaction would be deallocated at its end, one more
// round trip for each, and parsed again by the next).
func (p preparedTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	l := p.l
	if l.store.CachesStatements() {
		return nil, errUnprepared
	}
	l.stmtMu.Lock()
	st := l.stmts[query]
	if st == nil {
		if l.pending == nil {
			l.pending = map[string]func(context.Context) error{}
		}
		l.pending[query] = func(ctx context.Context) error {
			st, err := l.store.DB().PrepareContext(ctx, query)
			if err == nil {
				l.stmts[query] = st
			}
			return err
		}
	}
	l.stmtMu.Unlock()
	if st == nil {
		return nil, errUnprepared
	}
	return p.tx.StmtContext(ctx, st), nil
}

// preparePending prepares on the pool the statements noted by
// PrepareContext. One that does not prepare is left to run as SQL.
func (l *Ledger) preparePending(ctx context.Context) {
	l.stmtMu.Lock()
	defer l.stmtMu.Unlock()
	for query, prepare := range l.pending {
		delete(l.pending, query)
		if l.stmts[query] != nil {
			continue
		}
		if l.stmts == nil {
			l.stmts = map[string]*sql.Stmt{}
		}
		_ = prepare(ctx)
	}
}

func (p preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, err := p.PrepareContext(ctx, query); err == nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}

func (p preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, err := p.PrepareContext(ctx, query); err == nil {
		return st.QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, query, args...)
}

func (p preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, err := p.PrepareContext(ctx, query); err == nil {
		return st.ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}

func scanRow(s scanner) (*row, error) {
	var r row
	var held int
	if err := s.Scan(&r.name, &held, &r.requestID, &r.actor, &r.intent, &r.intentVersion, &r.hostID, &r.pid,
		&r.pidStart, &r.bootID, &r.createdAt, &r.heartbeatAt, &r.ttlSeconds, &r.metadata, &r.fencingToken,
		&r.updatedSeq, &r.file, &r.targets); err != nil {
		return nil, err
	}
	r.held = held != 0
	return &r, nil
}

func loadRow(ctx context.Context, q querier, name string) (*row, error) {
	r, err := scanRow(q.QueryRowContext(ctx, `SELECT `+rowColumns+` FROM locks WHERE lock_name = $1`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

func loadRows(ctx context.Context, q querier) ([]*row, error) {
	rs, err := q.QueryContext(ctx, `SELECT `+rowColumns+` FROM locks ORDER BY lock_name`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []*row
	for rs.Next() {
		r, err := scanRow(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

func saveRow(ctx context.Context, tx execer, r *row) error {
	held := 0
	if r.held {
		held = 1
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO locks (`+rowColumns+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)
		ON CONFLICT (lock_name) DO UPDATE SET held=excluded.held, request_id=excluded.request_id, actor=excluded.actor,
		intent=excluded.intent, intent_version=excluded.intent_version, host_id=excluded.host_id, pid=excluded.pid,
		pid_start=excluded.pid_start, boot_id=excluded.boot_id, created_at=excluded.created_at,
		heartbeat_at=excluded.heartbeat_at, ttl_seconds=excluded.ttl_seconds, metadata=excluded.metadata,
		fencing_token=excluded.fencing_token, updated_seq=excluded.updated_seq, file=excluded.file,
		targets=excluded.targets`,
		r.name, held, r.requestID, r.actor, r.intent, r.intentVersion, r.hostID, r.pid, r.pidStart, r.bootID,
		r.createdAt, r.heartbeatAt, r.ttlSeconds, r.metadata, r.fencingToken, r.updatedSeq, r.file, r.targetsJSON())
	return err
}

// head returns the last seq and hash, or 0 and genesis for an empty log.
// head is the last event's seq and hash (0 and the genesis when there is
// none). It refuses a log whose tail is gone, as the locks table shows it
// (a row updated by a seq past the last event: see truncation): appending
// there would reuse the missing seqs, fencing tokens included, and hide the cut.
// It also refuses events past the last one with stored Merkle hashes (the
// writing open computes them only for a ledger from before the tree): they
// were appended by something other than lockledger, and the next checkpoint
// would sign them.
func head(ctx context.Context, q querier, genesis string) (int64, string, error) {
	var seq, updated, hashed int64
	var hash string
	err := q.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM events ORDER BY seq DESC LIMIT 1), 0),
		coalesce((SELECT hash FROM events ORDER BY seq DESC LIMIT 1), ''),
		coalesce((SELECT max(u) FROM (SELECT max(updated_seq) AS u FROM locks
			UNION ALL SELECT max(updated_seq) FROM lock_holders) AS t), 0),
		coalesce((SELECT max(seq) FROM tlog_hashes), 0)`).Scan(&seq, &hash, &updated, &hashed)
	if err != nil {
		return 0, "", err
	}
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

func insertEvent(ctx context.Context, tx execer, seq int64, eventID, typ, lock, requestID, actor, at string, body []byte, prev, hash string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`, seq, eventID, typ, lock, requestID, actor, at, body, prev, hash)
	return err
}

// readTreeRow reads the stored Merkle hashes of event seq; nil when there
// are none.
func readTreeRow(ctx context.Context, q querier, seq int64) ([]byte, error) {
	var b []byte
	err := q.QueryRowContext(ctx, `SELECT hashes FROM tlog_hashes WHERE seq = $1`, seq).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

func insertTreeRow(ctx context.Context, tx execer, seq int64, hashes []byte) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO tlog_hashes (seq, hashes) VALUES ($1, $2)`, seq, hashes)
	return err
}
