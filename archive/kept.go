package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/store"
)

// CoveredError: a prune would remove events that a signed head covers (the
// head this user keeps of the ledger, or a witness's cosignature the ledger
// holds), and its archive is not kept or does not verify against that head.
// Such a range is removed only into an archive that is still where it was
// read, unchanged, at the moment of the delete, and that is in the log the
// head signed: otherwise what the head vouched for would be gone.
type CoveredError struct {
	By   string // the head: "the head kept in FILE", "witness W's cosignature"
	Size int64  // the head's size
	Err  error  // why the archive does not hold
}

func (e *CoveredError) Error() string {
	return fmt.Sprintf("%s (size %d) covers the events to prune; they are removed only into an archive that is kept and verifies against it: %v", e.By, e.Size, e.Err)
}

// Unwrap: a covered range refused is an archive that does not match.
func (e *CoveredError) Unwrap() []error { return []error{ErrMismatch, e.Err} }

// Kept checks that the archive c is still at its path, byte for byte the
// file that was read and checked (its SHA-256): a prune that removes
// events a head covers checks it right before the delete, so that the
// events it removes are in a file that exists then.
func (c *Checked) Kept() error {
	f, _, err := outfile.OpenRegular(c.Path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, outfile.ErrNotRegular) {
		return fmt.Errorf("archive %s is not kept: it is no longer a regular file", c.Path)
	}
	if err != nil {
		return fmt.Errorf("archive %s is not kept: %w", c.Path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("archive %s is not kept: %w", c.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != c.SHA256 {
		return fmt.Errorf("archive %s is not kept: its SHA-256 is %s now, %s when it was checked", c.Path, got, c.SHA256)
	}
	return nil
}

// InLogOf checks that the archive c is in the log a head of size events
// and root root signed, with a consistency proof from the stored Merkle
// hashes read through q: the archive's own root (its checkpoint's, checked
// against its events) at its last seq, and the head's, are one tree.
func (c *Checked) InLogOf(ctx context.Context, q store.Querier, size int64, root tlog.Hash) error {
	var err error
	if size == c.LastSeq {
		if root != c.Root {
			err = fmt.Errorf("its root at size %d is %s, the head's %s", size, c.Root, root)
		}
	} else {
		older, newer := tlog.Tree{N: c.LastSeq, Hash: c.Root}, tlog.Tree{N: size, Hash: root}
		if size < c.LastSeq {
			older, newer = newer, older
		}
		var p tlog.TreeProof
		if p, err = tlog.ProveTree(newer.N, older.N, store.TreeReader(ctx, q)); err == nil {
			err = tlog.CheckTree(p, newer.N, newer.Hash, older.N, older.Hash)
		}
	}
	if err != nil {
		return fmt.Errorf("archive %s is not in the log the head signed: %w", c.Path, err)
	}
	return nil
}
