package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/store"
)

// files plans the reconciliation of every lock file with the rebuilt rows.
func (p *projection) files(rebuilt map[string]*store.Row) error {
	names, err := p.l.files.LockNames(true)
	if err != nil {
		return err
	}
	for name, r := range rebuilt {
		if r.Held {
			names[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rebuilt)) {
		if !p.l.ownsFiles(rebuilt[name]) {
			continue // its host projects its targets
		}
		if err := p.targets(rebuilt[name]); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if err := p.lockFile(name, rebuilt[name]); err != nil {
			return fmt.Errorf("ledger: project lock file %s: %w", name, err)
		}
	}
	return nil
}

// repairAction names a repair in project's report, and repairWords say
// what it changed in the lock_projected event (%s: the lock file's path).
var repairAction = map[repair]string{
	repairDropPhantom:    "removed an uncommitted file",
	repairDropJournal:    "settled an interrupted write",
	repairPlace:          "placed",
	repairReplace:        "replaced",
	repairRemoveLeftover: "removed",
}

var repairWords = map[repair]string{
	repairDropPhantom:    "lock file of a write that never committed removed (%s)",
	repairPlace:          "lock file restored (%s)",
	repairReplace:        "lock file rewritten (%s)",
	repairRemoveLeftover: "lock file removed: the lock is free (%s)",
}

// repaired adds repair rp of lock name's file to the report and to the
// lock's lock_projected.
func (p *projection) repaired(name string, rp repair) {
	path := absPath(p.l.files.Path(name))
	words := fmt.Sprintf(repairWords[rp], path)
	if rp == repairDropJournal {
		words = "interrupted write settled (" + lockfile.JournalOf(path) + " removed)"
	}
	p.fileChange(name, repairAction[rp], p.l.files.Path(name), words)
}

// fileChange adds a change of one of lock's files to the report (action,
// detail) and to the lock's lock_projected (words).
func (p *projection) fileChange(lock, action, detail, words string) {
	p.rep.Files = append(p.rep.Files, ProjectChange{Lock: lock, Action: action, Detail: detail})
	p.plan(lock).changes = append(p.plan(lock).changes, words)
}

// absPath is p made absolute for a record (a relative root is relative to
// the directory of the command that ran, which the record does not keep).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// lockFile plans one ROOT/locks file: the repairs every writer makes, or,
// for an unreadable file, keeping it aside (see keepUnreadable).
func (p *projection) lockFile(name string, r *store.Row) error {
	l := p.l
	v, err := l.inspect(name, r)
	if err != nil {
		return err
	}
	if unreadableAt(v) {
		return p.keepUnreadable(name, r, v)
	}
	for _, rp := range v.repairs {
		p.repaired(name, rp)
	}
	if v.interloper {
		p.rep.Interlopers = append(p.rep.Interlopers, name)
	} else if v.holder != nil && v.holder.foreign {
		p.rep.Foreign = append(p.rep.Foreign, name)
	}
	if len(v.repairs) > 0 {
		p.plan(name).apply = append(p.plan(name).apply, func() error { return l.applyRepairs(v) })
	}
	return nil
}

// keepUnreadable plans an unreadable file at a lock's path: it is no v1
// lock, so no tool's holder, and blocks the lock for good (held, to fail
// safe). It is kept aside now (see lockfile.Dir.KeepAside), and after the commit the
// path gets the ledger's file back where the ledger holds the lock, or is
// left empty.
func (p *projection) keepUnreadable(name string, r *store.Row, v *view) error {
	l := p.l
	path := l.files.Path(name)
	lp := p.plan(name)
	// Of the view's repairs only the journal's apply: whatever the view
	// made of the file, it is neither the ledger's nor another tool's; a
	// held lock's file is then replaced by the row's.
	settle := &view{name: name, row: r}
	for _, rp := range v.repairs {
		if rp == repairDropJournal {
			settle.repairs = append(settle.repairs, rp)
			p.repaired(name, rp)
		}
	}
	kept, err := l.files.KeepAside(name, v.file, p.now)
	if errors.Is(err, lockfile.ErrChangedMeanwhile) {
		l.log.Warn("an unreadable lock file changed while project read it; left alone", "path", path)
		return nil
	}
	if err != nil {
		return err
	}
	if kept.ModeErr != nil {
		// Another user's file: it stays in the locks directory (0700), under its own mode.
		l.log.Warn("could not make the kept unreadable lock file private", "path", kept.Path, "err", kept.ModeErr)
	}
	aside, created := kept.Path, kept.Created
	if created {
		lp.linked = append(lp.linked, aside)
	}
	lp.aside = aside
	u := unreadableFile(v.file)
	u.Path = absPath(u.Path)
	p.fileChange(name, "moved aside", path+" -> "+aside, fmt.Sprintf("%s moved aside to %s", u, aside))
	held := r != nil && r.Held
	if held {
		settle.repairs = append(settle.repairs, repairReplace)
		p.fileChange(name, "replaced", path, "lock file rewritten ("+absPath(path)+")")
	}
	lp.apply = append(lp.apply, func() error {
		if err := l.applyRepairs(settle); err != nil || held {
			return err
		}
		return l.files.DropIfInode(name, v.file.Ino)
	})
	return nil
}

// unreadableAt reports whether the view found a file at the lock's path
// that is not the ledger's bytes and not a v1 lock at all: no tool's holder.
func unreadableAt(v *view) bool {
	if !v.file.Exists {
		return false
	}
	if v.row != nil && bytes.Equal(v.file.Data, v.row.File) {
		return false
	}
	_, err := ParseLockFile(v.file.Data)
	return err != nil
}

// targets plans the extra lock files (other tools' formats) of a rebuilt
// row: interrupted writes are settled and a held lock's missing file is
// placed (recoverTarget, as every write does); a held lock's file that is
// an older version of the holder's own (same request id in its format) is
// replaced; a free lock's file that still holds exactly the last holder's
// bytes is removed. Other files are left alone: a target path is not in
// the ledger's directory, and what else sits there is not the ledger's.
func (p *projection) targets(r *store.Row) error {
	l := p.l
	h := holdingFromRow(r)
	for _, t := range h.targets {
		want, err := renderTarget(t, h)
		if err != nil {
			return err
		}
		file, err := lockfile.ReadFile(t.Path)
		if err != nil {
			return fmt.Errorf("ledger: project %s: %w", t.Path, err)
		}
		lp := p.plan(r.Name)
		add := func(action, words string) { p.fileChange(r.Name, action, t.Path, words) }
		if !r.Held {
			if file.Exists && bytes.Equal(file.Data, want) {
				add("removed", "target "+t.Path+" removed: the lock is free")
				lp.apply = append(lp.apply, func() error { return lockfile.RemoveFile(t.Path, want) })
			}
			continue
		}
		journal, err := lockfile.ReadFile(lockfile.JournalOf(t.Path))
		if err != nil {
			return fmt.Errorf("ledger: project %s: %w", t.Path, err)
		}
		changed := false
		if journal.Exists {
			// What recoverTarget does with it: drop an uncommitted file, then the journal.
			if !bytes.Equal(journal.Data, want) && file.Exists && file.Ino == journal.Ino {
				file = lockfile.State{}
			}
			add(repairAction[repairDropJournal], "target "+t.Path+": interrupted write settled")
			changed = true
		}
		var replace bool
		switch {
		case !file.Exists:
			add("placed", "target "+t.Path+" restored")
			changed = true
		case !bytes.Equal(file.Data, want):
			f, err := formats.Lookup(t.Format)
			if err != nil {
				return err
			}
			if fh, perr := f.Parse(file.Data); perr != nil || fh.RequestID != r.RequestID {
				p.rep.Interlopers = append(p.rep.Interlopers, r.Name+" ("+t.Path+")")
				break
			}
			add("replaced", "target "+t.Path+" rewritten")
			changed, replace = true, true
		}
		if !changed {
			continue
		}
		lp.apply = append(lp.apply, func() error {
			if err := l.recoverTarget(t.Path, want); err != nil {
				return fmt.Errorf("ledger: project %s: %w", t.Path, err)
			}
			if !replace {
				return nil
			}
			j, err := lockfile.ReplaceFile(t.Path, want)
			if err != nil {
				return err
			}
			if err := lockfile.SyncClose(j); err != nil {
				return err
			}
			return lockfile.RemoveIfExists(lockfile.JournalOf(t.Path))
		})
	}
	return nil
}

// apply makes the planned file changes, after the commit.
func (p *projection) apply() error {
	for _, name := range slices.Sorted(maps.Keys(p.plans)) {
		for _, f := range p.plans[name].apply {
			if err := f(); err != nil {
				return fmt.Errorf("ledger: project lock %s: the change is recorded but could not be made (run project again): %w", name, err)
			}
		}
	}
	return nil
}

// dropAsides removes the links to unreadable files made by a run that
// does not commit: the files stay where they were.
func (p *projection) dropAsides() {
	for name, lp := range p.plans {
		for _, a := range lp.linked {
			if err := p.l.files.DropAside(name, a); err != nil {
				p.l.log.Warn("could not remove a link to an unreadable lock file", "path", a, "err", err)
			}
		}
	}
}
