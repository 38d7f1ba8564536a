package checkpoint

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"golang.org/x/mod/sumdb/tlog"
)

// The ledger stores tlog's stored hashes one row per event: the row of
// event seq holds, concatenated, the hashes tlog.StoredHashes returns for
// record seq-1 (its leaf, then one hash per subtree that record
// completes), which tlog numbers StoredHashIndex(0, seq-1) onwards. A
// stored hash at level L and index j (tlog.SplitStoredHashIndex) was
// completed by record ((j+1)<<L)-1, so it sits in row (j+1)<<L at
// position L.

// RowOf is where the stored hash with tlog index idx lives: the seq of its
// row and its position in the row.
func RowOf(idx int64) (seq int64, pos int) {
	level, j := tlog.SplitStoredHashIndex(idx)
	return (j + 1) << uint(level), level
}

// RowLen is how many hashes the row of event seq holds.
func RowLen(seq int64) int { return 1 + bits.TrailingZeros64(uint64(seq)) }

// JoinRow encodes a row's hashes.
func JoinRow(hs []tlog.Hash) []byte {
	b := make([]byte, 0, len(hs)*tlog.HashSize)
	for _, h := range hs {
		b = append(b, h[:]...)
	}
	return b
}

// ErrBadRow: a stored row that is not the hashes its event completes.
var ErrBadRow = errors.New("stored Merkle hashes malformed")

// ErrMissingRow: a stored row that a tree hash or proof needs is not there.
var ErrMissingRow = errors.New("stored Merkle hashes missing")

// RowReader is a tlog.HashReader over stored rows: read returns the row of
// event seq (nil when there is none).
func RowReader(read func(seq int64) ([]byte, error)) tlog.HashReader {
	return tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		rows := map[int64][]byte{}
		for _, idx := range indexes {
			seq, _ := RowOf(idx)
			if _, ok := rows[seq]; !ok {
				b, err := read(seq)
				if err != nil {
					return nil, err
				}
				rows[seq] = b
			}
		}
		return hashesOf(indexes, rows)
	})
}

// CachingRowReader is a tlog.HashReader over stored rows that reads, in
// one call of read, every row it needs and has not read before, and keeps
// the rows it read for its life: a reader for one transaction, whose
// stored rows do not change under it. read returns the rows of seqs that
// exist; a missing one is asked for again by the next call (the
// transaction may append it).
func CachingRowReader(read func(seqs []int64) (map[int64][]byte, error)) tlog.HashReader {
	rows := map[int64][]byte{}
	return tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		var missing []int64
		for _, idx := range indexes {
			if seq, _ := RowOf(idx); rows[seq] == nil && !slices.Contains(missing, seq) {
				missing = append(missing, seq)
			}
		}
		if len(missing) > 0 {
			got, err := read(missing)
			if err != nil {
				return nil, err
			}
			for seq, b := range got {
				if b != nil && slices.Contains(missing, seq) {
					rows[seq] = b
				}
			}
		}
		return hashesOf(indexes, rows)
	})
}

// hashesOf picks the stored hashes with the given indexes out of rows.
func hashesOf(indexes []int64, rows map[int64][]byte) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		seq, pos := RowOf(idx)
		b := rows[seq]
		if b == nil {
			return nil, fmt.Errorf("%w: seq %d", ErrMissingRow, seq)
		}
		if len(b) != RowLen(seq)*tlog.HashSize {
			return nil, fmt.Errorf("%w: seq %d's row holds %d bytes, want %d", ErrBadRow, seq, len(b), RowLen(seq)*tlog.HashSize)
		}
		copy(out[i][:], b[pos*tlog.HashSize:])
	}
	return out, nil
}

// Tree builds the Merkle tree one record at a time, holding only the
// hashes of its maximal complete subtrees (at most one per level): enough
// for tlog to compute the next stored hashes and the tree hash at any size
// reached. Verify runs it beside its pass over the events.
type Tree struct {
	n        int64
	frontier [64]tlog.Hash // frontier[L]: the complete subtree at level L, when bit L of n is set
}

// Size is the number of records appended.
func (t *Tree) Size() int64 { return t.n }

// NewTreeAt starts a tree that already holds n records, summarised by
// frontier: the hashes of its maximal complete subtrees, largest first (as
// Frontier returns them). An export that starts after seq 1 carries them.
func NewTreeAt(n int64, frontier []tlog.Hash) (*Tree, error) {
	if n < 0 || bits.OnesCount64(uint64(n)) != len(frontier) {
		return nil, fmt.Errorf("a tree of %d records has %d complete subtrees, got %d hashes", n, bits.OnesCount64(uint64(max(n, 0))), len(frontier))
	}
	t := &Tree{n: n}
	i := 0
	for l := 63; l >= 0; l-- {
		if n&(1<<uint(l)) != 0 {
			t.frontier[l] = frontier[i]
			i++
		}
	}
	return t, nil
}

// Frontier returns the hashes of the maximal complete subtrees, largest first.
func (t *Tree) Frontier() []tlog.Hash {
	hs, _ := t.ReadHashes(FrontierIndexes(t.n)) // the frontier's own indexes
	return hs
}

// ReadHashes serves the frontier to tlog; asking for any other hash is an
// error.
func (t *Tree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		level, j := tlog.SplitStoredHashIndex(idx)
		if t.n&(1<<uint(level)) == 0 || j != t.n>>uint(level)-1 {
			return nil, fmt.Errorf("checkpoint: hash %d is not on the frontier of a tree of %d records", idx, t.n)
		}
		out[i] = t.frontier[level]
	}
	return out, nil
}

// Append adds the next record's leaf hash and returns the hashes tlog
// stores for it (tlog.StoredHashesForRecordHash).
func (t *Tree) Append(leaf tlog.Hash) ([]tlog.Hash, error) {
	hs, err := tlog.StoredHashesForRecordHash(t.n, leaf, t)
	if err != nil {
		return nil, err
	}
	top := len(hs) - 1 // the subtrees below it merged into it
	for l := 0; l < top; l++ {
		t.frontier[l] = tlog.Hash{}
	}
	t.frontier[top] = hs[top]
	t.n++
	return hs, nil
}

// Root is the tree hash at the current size (tlog.TreeHash).
func (t *Tree) Root() (tlog.Hash, error) { return tlog.TreeHash(t.n, t) }

// FrontierIndexes are the tlog stored-hash indexes of the maximal complete
// subtrees of a tree of n records, largest first: what tlog.TreeHash(n)
// reads.
func FrontierIndexes(n int64) []int64 {
	var out []int64
	for l := 63; l >= 0; l-- {
		if n&(1<<uint(l)) != 0 {
			out = append(out, tlog.StoredHashIndex(l, n>>uint(l)-1))
		}
	}
	return out
}

// TreeFrom starts a Tree at n records, reading their frontier through r.
func TreeFrom(n int64, r tlog.HashReader) (*Tree, error) {
	hs, err := r.ReadHashes(FrontierIndexes(n))
	if err != nil {
		return nil, err
	}
	return NewTreeAt(n, hs)
}

// SliceError: a slice of a log is not the positions of a checkpoint's
// tree it claims to be.
type SliceError struct {
	Size, HeadSize int64
	Err            error
}

func (e *SliceError) Error() string {
	return fmt.Sprintf("the tree of the first %d records is not a prefix of the tree of %d: %v", e.Size, e.HeadSize, e.Err)
}

func (e *SliceError) Unwrap() error { return e.Err }

// CheckSlice proves that tree, the Merkle tree of a log's first
// tree.Size() records (NewTreeAt with the frontier of the records before a
// slice, then Append of each of the slice's leaves), is a prefix of the
// tree of head: proof is a consistency proof from tree.Size() to head.N
// (empty when they are equal). It holds only when the slice's records are
// exactly positions start+1..tree.Size() of the log head signs, whatever
// the frontier claimed: a wrong frontier changes the root.
func CheckSlice(tree *Tree, head tlog.Tree, proof tlog.TreeProof) error {
	n := tree.Size()
	fail := func(err error) error { return &SliceError{Size: n, HeadSize: head.N, Err: err} }
	if n > head.N {
		return fail(ErrTooSmall)
	}
	root, err := tree.Root()
	if err != nil {
		return fail(err)
	}
	if n == head.N {
		if len(proof) != 0 || root != head.Hash {
			return fail(&RootMismatchError{Size: n, Have: root, Want: head.Hash})
		}
		return nil
	}
	if err := tlog.CheckTree(proof, head.N, head.Hash, n, root); err != nil {
		return fail(err)
	}
	return nil
}
