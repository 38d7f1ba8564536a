package witness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
)

// tailChunk is how much of a witness file Last reads from its end at
// first; it doubles until a checkpoint of the ledger is found.
const tailChunk = 64 << 10

// Last reads the largest checkpoint of ledger id signed by v that the
// witness at path holds: in a directory, the files named by FileName for
// id, largest first; in a file, the notes from its end backwards (a file
// shared by several ledgers is read until one of id's is found). It
// returns nil when the witness is missing or holds none. Notes that do not
// verify with v, or name another ledger, are skipped: only v's signature
// makes a checkpoint the signer's own.
func Last(path, id string, v note.Verifier) (*checkpoint.Signed, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case fi.IsDir():
		return lastInDir(path, id, v)
	case !fi.Mode().IsRegular():
		return nil, kindErr(fi)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = regular(f); err != nil {
		return nil, err
	}
	size := fi.Size()
	for n := int64(tailChunk); ; n *= 2 {
		start := max(size-n, 0)
		buf := make([]byte, size-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if s := largest(buf, id, v); s != nil || start == 0 {
			return s, nil
		}
	}
}

// lastInDir is Last for a witness directory.
func lastInDir(dir, id string, v note.Verifier) (*checkpoint.Signed, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); e.Type().IsRegular() && strings.HasPrefix(n, id+"-") && strings.HasSuffix(n, ".checkpoint") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range slices.Backward(names) {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		if s := largest(b, id, v); s != nil {
			return s, nil
		}
	}
	return nil, nil
}

// largest is the largest checkpoint of id signed by v among the notes in
// b; a note cut by the start of b does not verify, and is skipped. Only
// the notes of id are verified, largest first, until one holds.
func largest(b []byte, id string, v note.Verifier) *checkpoint.Signed {
	var ours []*checkpoint.Signed
	for _, e := range checkpoint.SplitNotes(b) {
		if s, err := checkpoint.Open(e.Note); err == nil && s.Origin == checkpoint.Origin(id) {
			ours = append(ours, s)
		}
	}
	slices.SortStableFunc(ours, func(a, b *checkpoint.Signed) int { return cmp.Compare(b.Size, a.Size) })
	for _, s := range ours {
		if s, err := checkpoint.Open(s.Note, v); err == nil {
			return s
		}
	}
	return nil
}

// Last reads the largest checkpoint of ledger id signed by v from each
// witness (see Last), waiting at most the timeout as Publish does. It
// returns those found and the first witness that could not be read (past
// the timeout: ErrTimeout), after the others were read.
func (p *Publisher) Last(ctx context.Context, id string, v note.Verifier) ([]checkpoint.Earlier, error) {
	if len(p.paths) == 0 {
		return nil, nil
	}
	type result struct {
		found []checkpoint.Earlier
		err   error
	}
	r, err := within(ctx, p, func() (r result) {
		for _, w := range p.paths {
			s, err := Last(w, id, v)
			switch {
			case err != nil && r.err == nil:
				r.err = fmt.Errorf("witness %s: reading its last checkpoint: %w", w, err)
			case s != nil:
				r.found = append(r.found, checkpoint.Earlier{Checkpoint: s.Checkpoint, Source: "witness " + w})
			}
		}
		return r
	})
	if err != nil {
		return nil, fmt.Errorf("witness %s: reading the last checkpoint: %w", strings.Join(p.paths, ", "), err)
	}
	return r.found, r.err
}
