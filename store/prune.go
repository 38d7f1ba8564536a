package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// A prune removes the events below a seq from the live store once an
// archive of them has verified against it (package archive). The Merkle
// hashes all stay, so the tree stays whole and every proof keeps working;
// only the events' rows go. The triggers of migrations 0008 (SQLite) and
// postgres/0006 allow that DELETE only while the prune's horizon is open:
// from the horizon row PruneEvents writes to its ledger_pruned marker,
// which the caller appends next, in the same transaction.

// ErrPruneBoundary: a prune or archive names a seq that is not the end of
// a signed checkpoint, or a range the live store no longer (or does not
// yet) hold.
var ErrPruneBoundary = errors.New("not a prune boundary")

// ErrPruned: the ledger was pruned, and what was asked needs the archived
// events too (project rebuilds the projections from the whole log).
var ErrPruned = errors.New("the ledger was pruned: the events before its live log are in an archive, and this needs the whole log")

// FirstSeq is the live log's first seq (0 when it holds no event).
func FirstSeq(ctx context.Context, q Querier) (int64, error) {
	var seq sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT min(seq) FROM events`).Scan(&seq)
	return seq.Int64, err
}

// CheckpointSizes lists the sizes of the stored checkpoints, ascending,
// each once.
func CheckpointSizes(ctx context.Context, q Querier) ([]int64, error) {
	return QueryAll(ctx, q, ScanOne[int64], `SELECT DISTINCT size FROM checkpoints ORDER BY size`)
}

// LastSeqBefore is the largest seq whose event is dated before at (an
// events-table time), 0 if none.
func LastSeqBefore(ctx context.Context, q Querier, at string) (int64, error) {
	var seq sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT min(+seq) - 1 FROM events WHERE at >= $1`, at).Scan(&seq)
	if err != nil {
		return 0, err
	}
	if !seq.Valid {
		err = q.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events`).Scan(&seq)
	}
	return seq.Int64, err
}

// CompareLeaves compares leaves[i], the Merkle leaf of event from+i as an
// archive holds it, with the leaf stored for it (the first hash of its
// tlog_hashes row). It returns the first seq whose leaf differs or has no
// row, 0 when all agree.
func CompareLeaves(ctx context.Context, q Querier, from int64, leaves []tlog.Hash) (int64, error) {
	if len(leaves) == 0 {
		return 0, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT seq, hashes FROM tlog_hashes WHERE seq >= $1 AND seq < $2 ORDER BY seq`,
		from, from+int64(len(leaves)))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	want := from
	for rows.Next() {
		var seq int64
		var hs []byte
		if err := rows.Scan(&seq, &hs); err != nil {
			return 0, err
		}
		if seq != want || len(hs) < tlog.HashSize || !bytes.Equal(hs[:tlog.HashSize], leaves[seq-from][:]) {
			return want, rows.Err()
		}
		want++
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if want != from+int64(len(leaves)) {
		return want, nil
	}
	return 0, nil
}

// PrevHashOf is the prev_hash of event seq ("" when the live store does
// not hold it).
func PrevHashOf(ctx context.Context, q Querier, seq int64) (string, error) {
	var h string
	err := q.QueryRowContext(ctx, `SELECT prev_hash FROM events WHERE seq = $1`, seq).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return h, err
}

// PruneEvents opens the horizon of a prune (events below below may go
// until the event at markerSeq, the next one, is appended) and deletes
// the events below it. The caller appends the ledger_pruned marker at
// markerSeq in the same transaction, which closes the horizon; a
// transaction that does not is refused every later append but that
// marker's. It returns how many events it deleted.
func PruneEvents(ctx context.Context, tx interface {
	Querier
	Execer
}, below, markerSeq int64, archiveSHA256 string) (int64, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO prune_horizon (below_seq, marker_seq, archive_sha256) VALUES ($1, $2, $3)`,
		below, markerSeq, archiveSHA256); err != nil {
		return 0, fmt.Errorf("ledger: prune: the horizon: %w", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE seq < $1`, below)
	if err != nil {
		return 0, fmt.Errorf("ledger: prune: %w", err)
	}
	return res.RowsAffected()
}

// OpenRestore opens the restore of events first..below-1 below the live
// log, which starts at below: until the event at markerSeq (the next one,
// ledger_unpruned) is appended in the same transaction, those seqs may be
// inserted (InsertEvent), each once.
func OpenRestore(ctx context.Context, tx Execer, first, below, markerSeq int64, archiveSHA256 string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO prune_restore (marker_seq, first_seq, below_seq, archive_sha256) VALUES ($1, $2, $3, $4)`,
		markerSeq, first, below, archiveSHA256)
	if err != nil {
		return fmt.Errorf("ledger: unprune: the restore: %w", err)
	}
	return nil
}
