package trust

import (
	"cmp"
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

// ErrKind: a witness path that is neither a regular file nor a directory
// (a FIFO or a device would block the writer, or take the checkpoint
// nowhere durable).
var ErrKind = errors.New("not a regular file or a directory")

// KindError is ErrKind for fi, naming its type.
func KindError(fi fs.FileInfo) error { return fmt.Errorf("%w (%s)", ErrKind, fi.Mode().Type()) }

// Regular is f's FileInfo; a KindError where f is not a regular file.
func Regular(f *os.File) (fs.FileInfo, error) {
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = KindError(fi)
	}
	return fi, err
}

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
		return nil, KindError(fi)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = Regular(f); err != nil {
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
