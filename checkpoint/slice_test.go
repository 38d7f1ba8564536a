package checkpoint

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// memHashes is a whole tree's stored hashes in memory, as the ledger's
// tlog_hashes rows hold them.
type memHashes []tlog.Hash

func (m memHashes) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = m[x]
	}
	return out, nil
}

// TestCheckSliceProvesPositionsInTheSignedTree: records 8-13 of a log of
// 20, started from the tree of the first 7 and carried to the head by a
// consistency proof from 13, prove themselves in the head's tree; a
// changed record, a wrong frontier, a proof from another size, a head
// smaller than the slice each fail.
func TestCheckSliceProvesPositionsInTheSignedTree(t *testing.T) {
	var stored memHashes
	var leaves []tlog.Hash
	for i := range int64(20) {
		leaf := LeafHash(fmt.Appendf(nil, `{"seq":%d}`, i+1))
		leaves = append(leaves, leaf)
		hs, err := tlog.StoredHashes(i, fmt.Appendf(nil, `{"seq":%d}`, i+1), stored)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
	}
	root, err := tlog.TreeHash(20, stored)
	if err != nil {
		t.Fatal(err)
	}
	head := tlog.Tree{N: 20, Hash: root}
	slice := func(frontierOf int64, ls []tlog.Hash) *Tree {
		tr, err := TreeFrom(frontierOf, stored)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if _, err := tr.Append(l); err != nil {
				t.Fatal(err)
			}
		}
		return tr
	}
	proof, err := tlog.ProveTree(20, 13, stored)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSlice(slice(7, leaves[7:13]), head, proof); err != nil {
		t.Fatalf("the slice as it is: %v", err)
	}
	if err := CheckSlice(slice(7, leaves[7:20]), head, nil); err != nil {
		t.Fatalf("a slice to the head's size: %v", err)
	}
	changed := append([]tlog.Hash{}, leaves[7:13]...)
	changed[2][0] ^= 1
	wrongFrontier, _ := NewTreeAt(7, []tlog.Hash{leaves[0], leaves[1], leaves[2]})
	for _, l := range leaves[7:13] {
		wrongFrontier.Append(l)
	}
	other, _ := tlog.ProveTree(20, 12, stored)
	var se *SliceError
	for name, c := range map[string]struct {
		tr    *Tree
		proof tlog.TreeProof
	}{
		"a changed record": {slice(7, changed), proof},
		"a wrong frontier": {wrongFrontier, proof},
		"another proof":    {slice(7, leaves[7:13]), other},
		"a shorter head":   {slice(7, leaves[7:20]), nil},
	} {
		h := head
		if name == "a shorter head" {
			h = tlog.Tree{N: 13, Hash: root}
		}
		if err := CheckSlice(c.tr, h, c.proof); !errors.As(err, &se) {
			t.Errorf("%s: %v, want a *SliceError", name, err)
		}
	}
}
