package store

// The Merkle tree over the events (package checkpoint): its stored hashes
// (table tlog_hashes) are appended with each event, and computed for the
// events of a ledger from before the tree by the writing open.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
)

// TreeReader reads the stored Merkle hashes through q: inside a write
// transaction it sees the rows that transaction appended; through a read
// transaction, one snapshot (proofs, an export's tree line).
func TreeReader(ctx context.Context, q Querier) tlog.HashReader {
	return checkpoint.RowReader(func(seq int64) ([]byte, error) { return ReadTreeRow(ctx, q, seq) })
}

// TxTreeReader reads the stored Merkle hashes through q, a transaction:
// the rows one read needs in one statement (see ReadTreeRows), each row
// read once for the reader's life (checkpoint.CachingRowReader). Use one
// for the reads of one transaction.
func TxTreeReader(ctx context.Context, q Querier) tlog.HashReader {
	return checkpoint.CachingRowReader(func(seqs []int64) (map[int64][]byte, error) { return ReadTreeRows(ctx, q, seqs) })
}

// AppendTree stores the Merkle hashes of the event just inserted at seq, in
// q. known holds rows of tlog_hashes as q's transaction has them (read or
// written in it): the rows the hashes need are taken from there, the others
// read in one statement, and what it reads and writes is added to known.
func AppendTree(ctx context.Context, q interface {
	Querier
	Execer
}, seq int64, body []byte, known map[int64][]byte) error {
	read := func(seqs []int64) (map[int64][]byte, error) {
		got := map[int64][]byte{}
		var missing []int64
		for _, s := range seqs {
			if b := known[s]; b != nil {
				got[s] = b
			} else {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			rows, err := ReadTreeRows(ctx, q, missing)
			if err != nil {
				return nil, err
			}
			maps.Copy(got, rows)
			maps.Copy(known, rows)
		}
		return got, nil
	}
	hs, err := tlog.StoredHashes(checkpoint.Index(seq), body, checkpoint.CachingRowReader(read))
	if err != nil {
		if errors.Is(err, checkpoint.ErrMissingRow) || errors.Is(err, checkpoint.ErrBadRow) {
			return fmt.Errorf("ledger: the stored Merkle hashes (table tlog_hashes) are incomplete before seq %d: %w; something other than lockledger changed the ledger: run lockledger verify", seq, err)
		}
		return fmt.Errorf("ledger: Merkle hashes of seq %d: %w", seq, err)
	}
	row := checkpoint.JoinRow(hs)
	if err := InsertTreeRow(ctx, q, seq, row); err != nil {
		return err
	}
	known[seq] = row
	return nil
}

// BackfillBatch bounds one backfill transaction, so that writers waiting
// for the database are not held past their busy timeout.
const BackfillBatch = 20000

// BackfillMarker is the meta key present while the upgrade backfill of a
// ledger from before the tree is under way, so that an open interrupted
// between two batches is finished by the next open rather than taken for
// damage.
const BackfillMarker = "tlog_backfill"

// BackfillTree computes the stored hashes of every event of a ledger
// written before the tree existed: only as that upgrade (no stored hashes
// and no checkpoint yet, or an upgrade left unfinished). On a ledger that
// keeps them, events past the last hashed one were appended by something
// other than lockledger: they are left without hashes, verify reports
// them, writers refuse to append after them (ErrUnhashed, see head) and
// only project --accept-broken-chain computes them, recorded. It runs in
// transactions of BackfillBatch events, each re-reading where the tree
// stands, so that concurrent opens do the work once.
func BackfillTree(ctx context.Context, s Store, log *slog.Logger) error {
	start, done := time.Now(), int64(0)
	for {
		n, more, err := backfillOnce(ctx, s, log)
		if err != nil {
			return fmt.Errorf("ledger: computing the Merkle hashes of older events: %w", err)
		}
		done += n
		if !more {
			break
		}
	}
	if done > 0 {
		log.Info("computed the stored Merkle hashes of a ledger from before them", "events", done,
			"took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// TreeLag reports the last event and the last event with stored hashes.
func TreeLag(ctx context.Context, q Querier) (events, hashed int64, err error) {
	err = q.QueryRowContext(ctx, `SELECT coalesce((SELECT max(seq) FROM events), 0), coalesce((SELECT max(seq) FROM tlog_hashes), 0)`).
		Scan(&events, &hashed)
	return events, hashed, err
}

// upgrading tells whether the missing hashes are those of a ledger from
// before the tree: no stored hash and no checkpoint yet, or the marker of
// an unfinished upgrade.
func upgrading(ctx context.Context, q Querier, hashed int64) (bool, error) {
	var marked, checkpoints int64
	err := q.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM meta WHERE key = $1), (SELECT count(*) FROM checkpoints)`, BackfillMarker).
		Scan(&marked, &checkpoints)
	if err != nil {
		return false, err
	}
	return marked > 0 || (hashed == 0 && checkpoints == 0), nil
}

func backfillOnce(ctx context.Context, s Store, log *slog.Logger) (n int64, more bool, err error) {
	last, hashed, err := TreeLag(ctx, s)
	if err != nil || hashed >= last {
		return 0, false, err
	}
	tx, err := s.Begin(ctx)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback()
	if last, hashed, err = TreeLag(ctx, tx); err != nil || hashed >= last {
		return 0, false, err
	}
	if up, err := upgrading(ctx, tx, hashed); err != nil || !up {
		return 0, false, err
	}
	n, gap, err := HashTail(ctx, tx, log, hashed, BackfillBatch)
	if err != nil {
		return 0, false, err
	}
	more = !gap && hashed+n < last
	if more {
		_, err = tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ($1, 'in progress') ON CONFLICT DO NOTHING`, BackfillMarker)
	} else {
		_, err = tx.ExecContext(ctx, `DELETE FROM meta WHERE key = $1`, BackfillMarker)
	}
	if err != nil {
		return 0, false, err
	}
	if err := tx.Commit(); err != nil {
		return 0, false, err
	}
	return n, more, nil
}

// HashTail stores the Merkle hashes of up to limit events (0: all) after
// seq hashed, the last with stored hashes, in tx. It stops before a gap in
// seq (gap true): the log is damaged there (verify names it), and the
// tree's positions no longer follow seq.
func HashTail(ctx context.Context, tx *sql.Tx, log *slog.Logger, hashed int64, limit int) (n int64, gap bool, err error) {
	tree, err := checkpoint.TreeFrom(hashed, TreeReader(ctx, tx))
	if err != nil {
		return 0, false, err
	}
	if limit <= 0 {
		limit = math.MaxInt64 // no bound, in a LIMIT both engines take
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, body FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, hashed, limit)
	if err != nil {
		return 0, false, err
	}
	type pending struct {
		seq int64
		row []byte
	}
	var out []pending
	for rows.Next() {
		var seq int64
		var body []byte
		if err := rows.Scan(&seq, &body); err != nil {
			rows.Close()
			return 0, false, err
		}
		if seq != tree.Size()+1 {
			log.Warn("the events are not contiguous; stored Merkle hashes stop before the gap (run lockledger verify)",
				"after_seq", tree.Size(), "next_seq", seq)
			gap = true
			break
		}
		hs, err := tree.Append(checkpoint.LeafHash(body))
		if err != nil {
			rows.Close()
			return 0, false, err
		}
		out = append(out, pending{seq, checkpoint.JoinRow(hs)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	for _, p := range out {
		if err := InsertTreeRow(ctx, tx, p.seq, p.row); err != nil {
			return 0, false, err
		}
	}
	return int64(len(out)), gap, nil
}

// LastCheckpoint is the size and creation time of the last stored
// checkpoint (sql.ErrNoRows when there is none).
func LastCheckpoint(ctx context.Context, q Querier) (size int64, createdAt string, err error) {
	err = q.QueryRowContext(ctx, `SELECT size, created_at FROM checkpoints ORDER BY id DESC LIMIT 1`).Scan(&size, &createdAt)
	return size, createdAt, err
}

// LastCheckpointNote is the size and signed note of the last stored
// checkpoint (sql.ErrNoRows when there is none).
func LastCheckpointNote(ctx context.Context, q Querier) (size int64, note []byte, err error) {
	var n string
	err = q.QueryRowContext(ctx, `SELECT size, note FROM checkpoints ORDER BY id DESC LIMIT 1`).Scan(&size, &n)
	return size, []byte(n), err
}

// InsertCheckpoint stores a signed checkpoint of the first size events.
func InsertCheckpoint(ctx context.Context, tx Execer, size int64, root, note, keyName, createdAt string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (size, root, note, key_name, created_at) VALUES ($1, $2, $3, $4, $5)`,
		size, root, note, keyName, createdAt)
	return err
}

// HasCheckpoint reports whether the checkpoint of size events with the
// signed note is stored.
func HasCheckpoint(ctx context.Context, q Querier, size int64, note string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM checkpoints WHERE size = $1 AND note = $2`, size, note).Scan(&n)
	return n > 0, err
}

// StoredCheckpoint is a checkpoint as the ledger keeps it.
type StoredCheckpoint struct {
	ID   int64
	Size int64
	Note []byte
}

// StoredCheckpoints lists the checkpoints stored in the ledger whose size
// is in [minSize, maxSize] (0: no upper bound), oldest first.
func StoredCheckpoints(ctx context.Context, q Querier, minSize, maxSize int64) ([]StoredCheckpoint, error) {
	if maxSize <= 0 {
		maxSize = 1<<63 - 1
	}
	return checkpoints(ctx, q, `SELECT id, size, note FROM checkpoints WHERE size >= $1 AND size <= $2 ORDER BY id`, minSize, maxSize)
}

// CheckpointsAfter lists the stored checkpoints of the smallest and of the
// largest size above size (every row of those two sizes, oldest first):
// those an export that ends at size proves itself part of.
func CheckpointsAfter(ctx context.Context, q Querier, size int64) ([]StoredCheckpoint, error) {
	return checkpoints(ctx, q, `SELECT id, size, note FROM checkpoints
		WHERE size = (SELECT min(size) FROM checkpoints WHERE size > $1) OR size = (SELECT max(size) FROM checkpoints WHERE size > $1)
		ORDER BY id`, size)
}

// checkpoints reads the rows (id, size, note) of a checkpoints query.
func checkpoints(ctx context.Context, q Querier, query string, args ...any) ([]StoredCheckpoint, error) {
	out, err := QueryAll(ctx, q, func(rows *sql.Rows, c *StoredCheckpoint) error {
		return rows.Scan(&c.ID, &c.Size, &c.Note)
	}, query, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: checkpoints: %w", err)
	}
	return out, nil
}
