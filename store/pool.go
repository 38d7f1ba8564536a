package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/lockledger/lockledger/events"
)

// Pool is the connection pool an engine opened. Every engine's Store
// embeds it: it reads outside a transaction as a *sql.Tx reads inside one,
// and runs the ledger's statements that are not part of a decision. It
// never hands out the *sql.DB: the ledger's SQL stays in store and its
// engines (store/sql_test.go checks that no other package holds any).
type Pool struct{ db *sql.DB }

// NewPool is the Pool of db.
func NewPool(db *sql.DB) Pool { return Pool{db: db} }

func (p Pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.db.QueryRowContext(ctx, query, args...)
}

func (p Pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.db.QueryContext(ctx, query, args...)
}

func (p Pool) Prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.db.PrepareContext(ctx, query)
}

// LedgerID reads the ledger's id: sql.ErrNoRows where it has none yet.
func LedgerID(ctx context.Context, q Querier) (id string, err error) {
	err = q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'ledger_id'`).Scan(&id)
	return id, err
}

// CountEvents is how many events the log holds.
func CountEvents(ctx context.Context, q Querier) (n int64, err error) {
	err = q.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n)
	return n, err
}

// NewLedgerID gives the ledger id, created at created, unless it has an
// id by then, and returns the id it has.
func (p Pool) NewLedgerID(ctx context.Context, id string, created time.Time) (string, error) {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('ledger_id', $1), ('created_at', $2) ON CONFLICT DO NOTHING`,
		id, events.FormatTime(created)); err != nil {
		return "", err
	}
	if id, err = LedgerID(ctx, tx); err != nil {
		return "", err
	}
	return id, tx.Commit()
}

// TakenBefore reads the lock_acquired or lock_stolen event by which
// requestID last took lock before the event at beforeSeq (body nil: none).
func TakenBefore(ctx context.Context, q Querier, lock, requestID string, beforeSeq int64) (seq int64, body []byte, err error) {
	err = q.QueryRowContext(ctx, `SELECT seq, body FROM events WHERE request_id = $1 AND lock_name = $2
		AND type IN ('lock_acquired', 'lock_stolen') AND seq < $3 ORDER BY seq DESC LIMIT 1`,
		requestID, lock, beforeSeq).Scan(&seq, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, nil
	}
	return seq, body, err
}

// DeleteTreeRowsAbove deletes the stored Merkle hashes of the events after seq.
func DeleteTreeRowsAbove(ctx context.Context, tx Execer, seq int64) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM tlog_hashes WHERE seq > $1`, seq)
	return err
}

// DeleteRow deletes lock's row of the locks table.
func DeleteRow(ctx context.Context, tx Execer, lock string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE lock_name = $1`, lock)
	return err
}
