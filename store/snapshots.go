package store

import (
	"context"
	"database/sql"
	"iter"
)

// SnapshotEvery is the spacing of snapshots: one after every event whose
// seq is a multiple of it. A snapshot's block is its events after seq -
// SnapshotEvery, the span its MinAt describes. It is a variable only so
// that package ledger's tests can make it a few hundred events (see its
// SetSnapshotEvery): writers, readers and verify must all use one value.
var SnapshotEvery int64 = 10000

// Snapshot is a stored fold of the log (table snapshots): the state after
// the events FromSeq..Seq, in replay's encoding. It is a shortcut, never a
// source of truth: the reader checks it against the events table before
// it folds from it (see SnapshotsBefore), and verify recomputes it.
type Snapshot struct {
	Seq       int64  // the last event folded
	EventHash string // that event's hash when the snapshot was made
	FromSeq   int64  // the first event folded
	MaxAt     string // the latest at among the events folded
	// MinAt is the earliest at among the events of its block, "" where
	// not known.
	MinAt     string
	Version   int    // the encoding of State
	StateHash string // hex SHA-256 of State
	State     []byte // nil from SnapshotHeads
	// LogHash is the events table's hash at Seq now ("" when that event
	// is gone), from SnapshotsBefore only.
	LogHash string
}

// InsertSnapshot stores s unless a snapshot at its seq is stored already
// (two writers that made the same one).
func InsertSnapshot(ctx context.Context, tx Execer, s *Snapshot) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO snapshots (seq, event_hash, from_seq, max_at, version, state_hash, state, min_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (seq) DO NOTHING`,
		s.Seq, s.EventHash, s.FromSeq, s.MaxAt, s.Version, s.StateHash, s.State, sql.NullString{String: s.MinAt, Valid: s.MinAt != ""})
	return err
}

// DeleteStaleSnapshots deletes the snapshots of events the log does not
// hold: past seq, its last event, or following an event whose hash is
// not the one they were made after (a log cut, or restored from an older
// copy and written on, without its snapshots). Each would block, at its
// seq, the snapshot the log's own events make, and readers never fold
// from it. Snapshots of pruned events (none at their seq, before seq) are
// kept. It returns how many went.
func DeleteStaleSnapshots(ctx context.Context, tx Execer, seq int64) (int64, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM snapshots WHERE seq > $1
		OR event_hash <> coalesce((SELECT e.hash FROM events e WHERE e.seq = snapshots.seq), event_hash)`, seq)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// SnapshotsBefore yields the snapshots at or before seq whose events are
// all at or before maxAt ("": any), newest first, each with the events
// table's hash at its seq, for the reader to check.
func SnapshotsBefore(ctx context.Context, q Querier, seq int64, maxAt string) iter.Seq2[*Snapshot, error] {
	var logHash sql.NullString
	return rowsOf(func() (*sql.Rows, error) {
		return q.QueryContext(ctx, `SELECT s.seq, s.event_hash, s.from_seq, s.max_at, s.version, s.state_hash, s.state, e.hash
		FROM snapshots s LEFT JOIN events e ON e.seq = s.seq
		WHERE s.seq <= $1 AND ($2 = '' OR s.max_at <= $2) ORDER BY s.seq DESC`, seq, maxAt)
	}, func(rows *sql.Rows, s *Snapshot) error {
		err := rows.Scan(&s.Seq, &s.EventHash, &s.FromSeq, &s.MaxAt, &s.Version, &s.StateHash, &s.State, &logHash)
		s.LogHash = logHash.String
		return err
	})
}

// SnapshotHeads yields every snapshot after seq after without its state,
// in seq order.
func SnapshotHeads(ctx context.Context, q Querier, after int64) iter.Seq2[*Snapshot, error] {
	return rowsOf(func() (*sql.Rows, error) {
		return q.QueryContext(ctx, `SELECT seq, event_hash, from_seq, max_at, version, state_hash, coalesce(min_at, '') FROM snapshots WHERE seq > $1 ORDER BY seq`, after)
	}, func(rows *sql.Rows, s *Snapshot) error {
		return rows.Scan(&s.Seq, &s.EventHash, &s.FromSeq, &s.MaxAt, &s.Version, &s.StateHash, &s.MinAt)
	})
}

// SnapshotMarks are the snapshots of the fold from first at or before
// upTo without their states, in seq order, as SnapshotHeads has them:
// what readers take of them, read through their bounds' index (b) and the
// leading columns of their rows (s), in one statement, never through the
// states SQLite keeps in the row before min_at (a column added after
// them, which a row would read past the state's overflow pages for).
func SnapshotMarks(ctx context.Context, q Querier, first, upTo int64) ([]Snapshot, error) {
	return QueryAll(ctx, q, func(rows *sql.Rows, s *Snapshot) error {
		s.FromSeq = first
		return rows.Scan(&s.Seq, &s.EventHash, &s.MaxAt, &s.MinAt, &s.Version, &s.StateHash)
	}, snapshotMarks, first, upTo)
}

const snapshotMarks = `SELECT b.seq, b.event_hash, b.max_at, coalesce(b.min_at, ''), s.version, s.state_hash
	FROM snapshots b JOIN snapshots s ON s.seq = b.seq WHERE b.from_seq = $1 AND b.seq <= $2 ORDER BY b.seq`

// EventHash is the hash of the event at seq ("" when there is none).
func EventHash(ctx context.Context, q Querier, seq int64) (string, error) {
	var h string
	err := q.QueryRowContext(ctx, `SELECT hash FROM events WHERE seq = $1`, seq).Scan(&h)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return h, err
}
