package invocation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/trust"
)

// CreateOutput starts the output file that flag names: written beside
// path and renamed into place by Commit. A path inside the root (under
// any name), a symlink, or anything but a regular file at path is invalid
// input naming flag, path and the rule, and nothing is written.
func (g *Globals) CreateOutput(flag, path string, opts ...outfile.Option) (*outfile.File, error) {
	root := trust.Resolve(g.Root)
	opts = append([]outfile.Option{outfile.OutsideOf(root, filepath.Join(root, ledger.LocksDir))}, opts...)
	f, err := outfile.Create(path, opts...)
	var refused *outfile.RefusedError
	switch {
	case errors.As(err, &refused):
		return nil, g.refusedOutput(flag, err)
	case err != nil:
		// A directory that is not there, or not this user's to write:
		// the message names the flag and the path as typed, not only the
		// directory the open failed on.
		return nil, fmt.Errorf("%s %q: %w", flag, path, err)
	}
	return f, nil
}

// ReadInto runs read on one snapshot of the ledger (Reading), writing to
// -o path through CreateOutput, put in place once read succeeds, or to
// standard output when path is "".
func (g *Globals) ReadInto(ctx context.Context, path string, read func(w io.Writer, r *Reader) error, opts ...outfile.Option) error {
	var w io.Writer = g.IO.Out
	var file *outfile.File
	if path != "" {
		f, err := g.CreateOutput("-o", path, opts...)
		if err != nil {
			return err
		}
		defer f.Abort()
		w, file = f, f
	}
	err := g.Reading(ctx, func(r *Reader) error { return read(w, r) })
	if err != nil || file == nil {
		return err
	}
	return g.CommitOutput("-o", file)
}

// CommitOutput puts f in its place; a target changed into something
// refused since CreateOutput is invalid input too.
func (g *Globals) CommitOutput(flag string, f *outfile.File) error {
	return g.refusedOutput(flag, f.Commit())
}

func (g *Globals) refusedOutput(flag string, err error) error {
	var refused *outfile.RefusedError
	if !errors.As(err, &refused) {
		return err
	}
	rule, root := refused.Rule, trust.Resolve(g.Root)
	if refused.Inside != "" {
		if rule == outfile.InsideRule(root) {
			rule = "is inside the ledger's root " + root
		} else {
			rule += ", in the ledger's root " + root
		}
		rule += ": " + flag + " never writes among its files (ledger.db, its -wal and -shm, writer.flock, the lock files)"
	}
	return events.Invalid(flag, refused.Path, rule)
}
