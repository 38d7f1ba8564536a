package checkpoint

import (
	"slices"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// A caching reader asks for each row once, all the rows one read lacks in
// one call, and asks again for a row that was missing (appended since).
func TestCachingRowReaderReadsEachRowOnceAndMissingOnesAgain(t *testing.T) {
	s, _ := appendBodies(t, bodies(40))
	held := map[int64][]byte{}
	for seq, b := range s.rows {
		if seq <= 39 {
			held[seq] = b
		}
	}
	var calls [][]int64
	r := CachingRowReader(func(seqs []int64) (map[int64][]byte, error) {
		calls = append(calls, slices.Clone(seqs))
		out := map[int64][]byte{}
		for _, seq := range seqs {
			if b, ok := held[seq]; ok {
				out[seq] = b
			}
		}
		return out, nil
	})
	want39, err := tlog.TreeHash(39, s.reader())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := tlog.TreeHash(39, r); err != nil || got != want39 {
			t.Fatalf("TreeHash(39) = %v, %v, want %v", got, err, want39)
		}
	}
	if len(calls) != 1 {
		t.Fatalf("two tree hashes of 39 rows read in %d calls %v, want 1", len(calls), calls)
	}
	for _, c := range calls {
		for i, seq := range c {
			if slices.Contains(c[:i], seq) {
				t.Fatalf("row %d asked for twice in one call: %v", seq, c)
			}
		}
	}
	if _, err := tlog.TreeHash(40, r); err == nil {
		t.Fatal("a tree hash needing a missing row read")
	}
	held[40] = s.rows[40]
	want40, _ := tlog.TreeHash(40, s.reader())
	if got, err := tlog.TreeHash(40, r); err != nil || got != want40 {
		t.Fatalf("after row 40 was appended: %v, %v", got, err)
	}
	if last := calls[len(calls)-1]; !slices.Equal(last, []int64{40}) {
		t.Fatalf("the last call asked for %v, want only the row missing before", last)
	}
}

// The same earlier checkpoint given twice (the head kept and the memory of
// it) is proven once: no row is read for the second.
func TestCheckExtendsProvesTheSameEarlierOnce(t *testing.T) {
	s, _ := appendBodies(t, bodies(23))
	reads := 0
	r := RowReader(func(seq int64) ([]byte, error) { reads++; return s.rows[seq], nil })
	root, err := tlog.TreeHash(23, s.reader())
	if err != nil {
		t.Fatal(err)
	}
	old, _ := tlog.TreeHash(13, s.reader())
	next := Checkpoint{Origin: Origin("id"), Size: 23, Root: root}
	e := Earlier{Checkpoint: Checkpoint{Origin: Origin("id"), Size: 13, Root: old}, Source: "kept"}
	if err := CheckExtends(next, r, e); err != nil {
		t.Fatal(err)
	}
	once := reads
	reads = 0
	if err := CheckExtends(next, r, e, Earlier{Checkpoint: e.Checkpoint, Source: "memory"}); err != nil {
		t.Fatal(err)
	}
	if reads != once {
		t.Fatalf("proving one earlier checkpoint read %d rows, the same one twice %d", once, reads)
	}
	bad := Checkpoint{Origin: Origin("id"), Size: 23, Root: old}
	if err := CheckExtends(bad, r, e, e); err == nil {
		t.Fatal("a next root that is not the tree's passed")
	}
}
