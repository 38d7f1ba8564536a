package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// Restore is ledger.Unprune's restore of the archive c, read again from f:
// in the write transaction q (next: the marker's seq), c must be the
// archive of the last prune standing (its SHA-256, its range, ending where
// the live log starts and chaining into it, holding the leaves the stored
// tree holds), and its events are inserted back byte for byte (the stored
// Merkle hashes never left). file is the archive's absolute path, for the
// marker. The head, the seqs and the fencing tokens do not move.
func Restore(c *Checked, f io.ReadSeeker, ledgerID, file string) func(ctx context.Context, q store.PreparedTx, next int64) (*events.Pruned, error) {
	return func(ctx context.Context, q store.PreparedTx, next int64) (*events.Pruned, error) {
		if c.LedgerID != ledgerID {
			return nil, c.mismatch("unprune", "it is ledger %s's, this is ledger %s", c.LedgerID, ledgerID)
		}
		last, err := replay.LastPrune(ctx, q)
		if err != nil {
			return nil, err
		}
		if last == nil {
			return nil, c.mismatch("unprune", "the ledger holds no prune to undo")
		}
		first, err := store.FirstSeq(ctx, q)
		if err != nil {
			return nil, err
		}
		switch {
		case first != last.BelowSeq:
			return nil, c.mismatch("unprune", "the live log starts at seq %d, not where the last prune (seq %d) left it, seq %d: run lockledger verify", first, last.MarkerSeq, last.BelowSeq)
		case c.SHA256 != last.ArchiveSHA256 || c.FirstSeq != last.FirstSeq || c.LastSeq+1 != last.BelowSeq:
			return nil, c.mismatch("unprune", "it holds seq %d-%d with SHA-256 %s; the last prune (seq %d) archived seq %d-%d with SHA-256 %s",
				c.FirstSeq, c.LastSeq, c.SHA256, last.MarkerSeq, last.FirstSeq, last.BelowSeq-1, last.ArchiveSHA256)
		case c.HeadHash != last.HeadHash:
			return nil, c.mismatch("unprune", "its last hash is %s, the prune recorded %s", c.HeadHash, last.HeadHash)
		}
		if bad, err := store.CompareLeaves(ctx, q, c.FirstSeq, c.leaves); err != nil {
			return nil, err
		} else if bad != 0 {
			return nil, c.mismatch("unprune", "seq %d's leaf is not the one the live tree stores", bad)
		}
		if err := store.OpenRestore(ctx, q, c.FirstSeq, last.BelowSeq, next, c.SHA256); err != nil {
			return nil, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		h := sha256.New()
		var n int64
		_, err = replay.ReadExport(io.TeeReader(f, h), func(r *replay.Row) error {
			var env events.Envelope
			if err := json.Unmarshal(r.Body, &env); err != nil {
				return fmt.Errorf("seq %d: %w", r.Seq, err)
			}
			n++
			return store.InsertEvent(ctx, q, r.Seq, env.EventID, string(env.Type), env.LockName, env.RequestID, env.Actor, env.At,
				r.Body, r.PrevHash, r.Hash)
		})
		if err != nil {
			return nil, fmt.Errorf("unprune: archive %s: %w", c.Path, err)
		}
		if sum := hex.EncodeToString(h.Sum(nil)); sum != c.SHA256 || n != int64(len(c.leaves)) {
			return nil, c.mismatch("unprune", "it changed while it was read (SHA-256 %s, then %s)", c.SHA256, sum)
		}
		return &events.Pruned{FirstSeq: c.FirstSeq, LastSeq: c.LastSeq, Events: n, HeadHash: c.HeadHash, File: file,
			Note: events.PruneNote(c.SHA256, last.Root)}, nil
	}
}
