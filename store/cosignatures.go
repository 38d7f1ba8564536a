package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/events"
)

// Cosignature is one witness's cosignature of a checkpoint
// (tlogwitness.Open checks one).
type Cosignature struct {
	Witness string    // the witness key's name
	Key     string    // its verifier key
	URL     string    // where it was asked, when it was
	Time    time.Time // when the witness cosigned, as it signed
	Size    int64     // the checkpoint's tree size and root
	Root    tlog.Hash
	// Note is the checkpoint text, a blank line and the cosignature line:
	// a signed note of its own, which tlogwitness.OpenNote checks with the
	// key alone.
	Note []byte
}

// InsertCosignatures stores witnesses' cosignatures.
func InsertCosignatures(ctx context.Context, tx Execer, cs []*Cosignature) error {
	for _, c := range cs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO cosignatures (size, root, witness, key, url, note, cosigned_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			c.Size, c.Root.String(), c.Witness, c.Key, c.URL, string(c.Note), events.FormatTime(c.Time)); err != nil {
			return fmt.Errorf("ledger: cosignatures: %w", err)
		}
	}
	return nil
}

// StoredCosignature is a cosignature as the ledger keeps it.
type StoredCosignature struct {
	ID      int64
	Size    int64
	Witness string
	Note    []byte
}

// StoredCosignatures lists the cosignatures stored in the ledger, oldest
// first.
func StoredCosignatures(ctx context.Context, q Querier) ([]StoredCosignature, error) {
	out, err := QueryAll(ctx, q, func(rows *sql.Rows, c *StoredCosignature) error {
		return rows.Scan(&c.ID, &c.Size, &c.Witness, &c.Note)
	}, `SELECT id, size, witness, note FROM cosignatures ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("ledger: cosignatures: %w", err)
	}
	return out, nil
}

// lastCosignedRows bounds how many of a witness's largest cosignatures
// Witnessed reads before it gives up on rows that do not verify.
const lastCosignedRows = 16

// Witnessed is the log as witnesses see it (tlogwitness.Log): its trees
// read in one snapshot each, and the cosignatures it keeps.
type Witnessed struct{ S Store }

// ProveTree proves that the stored tree of size events extends the one
// of old events.
func (w Witnessed) ProveTree(ctx context.Context, size, old int64) (tlog.TreeProof, error) {
	tx, err := w.S.BeginRead(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	return tlog.ProveTree(size, old, TreeReader(ctx, tx))
}

// Cosigned is the largest tree size of which the ledger keeps a
// cosignature by the witness key that verified accepts (0: none). A row it
// does not accept (anyone who can write the database can add one) counts
// for nothing.
func (w Witnessed) Cosigned(ctx context.Context, key string, verified func(note []byte) (size int64, ok bool)) (int64, error) {
	rows, err := w.S.QueryContext(ctx, `SELECT note FROM cosignatures WHERE key = $1 ORDER BY size DESC, id DESC LIMIT $2`, key, lastCosignedRows)
	if err != nil {
		return 0, fmt.Errorf("ledger: cosignatures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return 0, fmt.Errorf("ledger: cosignatures: %w", err)
		}
		if size, ok := verified([]byte(n)); ok {
			return size, nil
		}
	}
	return 0, rows.Err()
}

// Size is how many events the log holds.
func (w Witnessed) Size(ctx context.Context) (int64, error) {
	n, _, err := TreeLag(ctx, w.S)
	return n, err
}
