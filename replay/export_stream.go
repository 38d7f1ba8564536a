package replay

import (
	"github.com/lockledger/lockledger/verify"

	"fmt"
	"slices"
)

// A follower's stream (export --follow) writes each signed checkpoint
// right after the event of its size, and a stream resumed after seq N
// starts with the tree line of size N: so do the streams of a follower
// restarted with --after-seq, appended one after another to one file.
// verify --file checks such lines where they stand.

// lateTree checks a tree line after events: it must be the tree the file's
// events have built so far (a resumed stream), else the stream skipped or
// repeated events.
func (t *treeCheck) lateTree(line int64, tr *exportTree) *verify.Problem {
	size := t.tree.Size()
	if tr.Size == size && slices.Equal(tr.Frontier, t.tree.Frontier()) {
		return nil
	}
	detail := fmt.Sprintf("a tree line of size %d after event %d: a stream resumed after another seq than the one before it ended with", tr.Size, size)
	if tr.Size == size {
		detail = fmt.Sprintf("a tree line of size %d whose hashes are not those of the events before it", tr.Size)
	}
	return &verify.Problem{Seq: size + 1, Line: line, Kind: verify.KindMalformed, Detail: detail}
}

// lateNote checks a checkpoint line after events: against the tree now
// when it is of the size reached, when that size is reached when it is
// larger; one of a size already passed cannot be checked (a stream
// repeats the newest checkpoint the writers signed when they sign less
// often than it is asked to write one).
func (t *treeCheck) lateNote(ns NoteSource) {
	if t.trust == nil {
		t.trust = &Trust{}
	}
	n := len(t.anchors)
	a := t.prepareNote(ns, &t.origin)
	if a == nil {
		return
	}
	t.anchors = t.anchors[:n]
	size := t.tree.Size()
	switch {
	case a.size < size:
		a.result.Result = "not checked"
		a.result.Detail = fmt.Sprintf("it comes after event %d, past its size, and no earlier line carried it", size)
	case a.size == size:
		t.anchors = slices.Insert(t.anchors, t.next, a)
		t.matchRoot(a)
		t.next++
	default:
		i := t.next
		for i < len(t.anchors) && t.anchors[i].size <= a.size {
			i++
		}
		t.anchors = slices.Insert(t.anchors, i, a)
	}
}
