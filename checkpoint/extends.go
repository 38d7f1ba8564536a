package checkpoint

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// Earlier is a checkpoint a signer signed before and kept out of the
// ledger's reach, with where it was found: a witness, or its own memory.
type Earlier struct {
	Checkpoint
	Source string
}

// NotExtendedError: a tree about to be signed does not extend one signed
// before: the log was cut or rewritten since. Nothing may be signed on it.
type NotExtendedError struct {
	Earlier Earlier
	Size    int64 // the events in the tree about to be signed
	Err     error // why the consistency proof failed
}

func (e *NotExtendedError) Error() string {
	signed := fmt.Sprintf("the checkpoint of %d events it signed", e.Earlier.Size)
	if !e.Earlier.Time.IsZero() {
		signed += " at " + e.Earlier.Time.UTC().Format(time.RFC3339)
	}
	signed += " (" + e.Earlier.Source + ")"
	if e.Earlier.Size > e.Size {
		return fmt.Sprintf("refusing to sign: the ledger holds %d events, fewer than %s: its tail was cut, or an older copy of it "+
			"(a backup) put back, since; %s", e.Size, signed, whatToDo)
	}
	return fmt.Sprintf("refusing to sign: the ledger's %d events do not extend %s: %v; the log was rewritten, or an older copy of it "+
		"(a backup) put back and written to, since; %s", e.Size, signed, e.Err, whatToDo)
}

// whatToDo follows a NotExtendedError: how to tell a cut from a restore,
// and how to go on from a restore that was meant.
const whatToDo = "verify with the verifier key and the witness names the first bad seq; to go on from this state " +
	"(a restore you meant), run `lockledger project --accept-rollback` (recorded), and give writers a new witness if one kept that checkpoint"

func (e *NotExtendedError) Unwrap() error { return e.Err }

// CheckExtends proves that next, the tree of next.Size events read through
// r, extends each earlier checkpoint of the same origin (others are
// skipped): a consistency proof from each, which fails unless r's first
// earlier.Size records still hash to its root. It returns a
// *NotExtendedError for the first that it does not extend.
//
// next.Root is taken as r's root, not read again: the proof checks against
// it. An earlier checkpoint the same as one proven before (the head kept
// and this process's memory of it, say) is proven once.
func CheckExtends(next Checkpoint, r tlog.HashReader, earlier ...Earlier) error {
	read := &readErr{r: r}
	r = read
	for i, e := range earlier {
		if e.Origin != next.Origin || e.Size == 0 || slices.ContainsFunc(earlier[:i], e.sameTree) {
			continue
		}
		if e.Size > next.Size {
			return &NotExtendedError{Earlier: e, Size: next.Size}
		}
		err := matchRoot(e.Checkpoint, r)
		var proof tlog.TreeProof
		if err == nil {
			proof, err = tlog.ProveTree(next.Size, e.Size, r)
		}
		if err == nil {
			err = tlog.CheckTree(proof, next.Size, next.Root, e.Size, e.Root)
		}
		if read.err != nil {
			// The tree could not be read (a database connection cut):
			// that says nothing of whether it extends e.
			return fmt.Errorf("checking that the tree of %d events extends %d (%s): %w", next.Size, e.Size, e.Source, read.err)
		}
		if err != nil {
			return &NotExtendedError{Earlier: e, Size: next.Size, Err: err}
		}
	}
	return nil
}

// readErr is a tlog.HashReader that keeps the first error its reader
// returned, so that a failed read is told from a proof that failed.
type readErr struct {
	r   tlog.HashReader
	err error
}

func (h *readErr) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	hashes, err := h.r.ReadHashes(indexes)
	if err != nil && h.err == nil {
		h.err = err
	}
	return hashes, err
}

// sameTree: o is a checkpoint of the same tree as e.
func (e Earlier) sameTree(o Earlier) bool {
	return o.Origin == e.Origin && o.Size == e.Size && o.Root == e.Root
}

// Memory is the largest checkpoint of each origin that a signer signed and
// committed, kept in its process. The zero Memory is empty; a nil one
// remembers nothing. It is safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	last map[string]Checkpoint
}

// Remember keeps c unless a larger checkpoint of its origin is kept.
func (m *Memory) Remember(c Checkpoint) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]Checkpoint{}
	}
	if last, ok := m.last[c.Origin]; !ok || c.Size > last.Size {
		m.last[c.Origin] = c
	}
}

// Earlier is the checkpoint of origin kept, if any, as an Earlier named
// source.
func (m *Memory) Earlier(origin, source string) []Earlier {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.last[origin]; ok {
		return []Earlier{{Checkpoint: c, Source: source}}
	}
	return nil
}
