package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/store"
)

// Targets are extra lock files in other tools' formats (--file FORMAT:PATH)
// that a holding projects besides ROOT/locks/NAME.lock. They are recorded
// in the acquiring event, placed, replaced and removed with the same
// journal-and-link rules as the primary file, and a file already at a
// target's path that the ledger did not write is a holder, judged by its
// own format's rules.

// ValidateTargets checks targets: known formats, absolute clean paths, no
// duplicates, and none among the ledger's own files: no path inside the
// root (symlinks of directories resolved) other than below a subdirectory
// of the locks directory, whose top level holds the ledger's own lock files.
func (l *Ledger) ValidateTargets(ts []events.Target) error {
	seen := map[string]bool{}
	for _, t := range ts {
		if _, err := formats.Lookup(t.Format); err != nil {
			return events.Invalid("--file", t.String(), err.Error())
		}
		if !filepath.IsAbs(t.Path) || filepath.Clean(t.Path) != t.Path {
			return events.Invalid("--file", t.String(), "path must be absolute and clean")
		}
		if seen[t.Path] {
			return events.Invalid("--file", t.String(), "the same path is given twice")
		}
		seen[t.Path] = true
		if err := l.checkTargetPath(t); err != nil {
			return err
		}
	}
	return nil
}

// checkTargetPath refuses a target path that is, or may become, one of the
// ledger's own files: ledger.db and its -wal and -shm, writer.flock, the
// lock files and their journals. The root and its locks directory are
// recognised by name (symlinks resolved) and by device and inode, which
// also catches a second name no symlink resolution can see: a bind mount.
func (l *Ledger) checkTargetPath(t events.Target) error {
	bad := func(rule string) error { return events.Invalid("--file", t.String(), rule) }
	p, err := lockfile.Resolve(t.Path)
	if err != nil {
		return bad("cannot be resolved: " + err.Error())
	}
	root, err := filepath.Abs(l.root)
	if err == nil {
		root, err = lockfile.Resolve(root)
	}
	if err != nil {
		return fmt.Errorf("ledger: root: %w", err)
	}
	locks := filepath.Join(root, LocksDir)
	if !lockfile.Within(root, p) {
		p = lockfile.SameDirectory(p, root, locks)
	}
	if !lockfile.Within(root, p) {
		return nil
	}
	as := ""
	if p != t.Path {
		as = " (as " + p + ")"
	}
	switch {
	case !lockfile.Within(locks, p) || p == locks:
		return bad(fmt.Sprintf("is inside the ledger's root %s%s: lockledger never writes over its own files (ledger.db, its -wal and -shm, writer.flock); only a subdirectory of %s may hold targets",
			root, as, locks))
	case filepath.Dir(p) == locks:
		return bad(fmt.Sprintf("is in the ledger's locks directory %s%s, whose files are the ledger's own tower-fleet lock files; use a subdirectory, or no --file (the lock file is there already)",
			locks, as))
	}
	return nil
}

// ReadTargetFile reads a lock file at path without following symlinks;
// exists is false when there is none.
func ReadTargetFile(path string) (data []byte, exists bool, err error) {
	st, err := lockfile.ReadFile(path)
	return st.Data, st.Exists, err
}

// TargetsOf returns the targets the ledger's current holder of lock projects.
func (l *Ledger) TargetsOf(ctx context.Context, lock string) ([]events.Target, error) {
	r, err := store.LoadRow(ctx, l.store, lock)
	if err != nil || r == nil || !r.Held {
		return nil, err
	}
	return rowTargets(r), nil
}

// renderTarget is the exact file a holding projects at target t.
func renderTarget(t events.Target, h *holding) ([]byte, error) {
	f, err := formats.Lookup(t.Format)
	if err != nil {
		return nil, err
	}
	return f.Render(formats.Holder{Lock: h.rec.LockName, RequestID: h.rec.RequestID, Actor: h.rec.Actor, Intent: h.rec.Intent,
		IntentVersion: h.rec.IntentVersion, HostID: h.rec.HostID, PID: h.rec.PID, CreatedAt: h.created,
		HeartbeatAt: h.heartbeat, TTL: time.Duration(h.rec.TTLSeconds) * time.Second, Metadata: h.rec.Metadata})
}

// LocalEnv is the formats.Env of this host with the real process probe.
func LocalEnv(maxAge time.Duration) formats.Env {
	return formats.EnvOf(ThisHost().ID, &proc.Local{}, maxAge)
}

func (l *Ledger) formatsEnv(maxAge time.Duration) formats.Env {
	return formats.EnvOf(l.host.ID, l.probe, maxAge)
}

// ownBytes is what the ledger's holder h projects at path, when it owns it.
func ownBytes(h *holding, path string) ([]byte, bool) {
	t, ok := owns(h, path)
	if !ok {
		return nil, false
	}
	b, err := renderTarget(t, h)
	return b, err == nil
}

func owns(h *holding, path string) (events.Target, bool) {
	if h != nil && !h.foreign {
		if i := slices.IndexFunc(h.targets, func(t events.Target) bool { return t.Path == path }); i >= 0 {
			return h.targets[i], true
		}
	}
	return events.Target{}, false
}

// recoverTarget settles target path after a process left a change there
// (lockfile.RecoverFile), restoring a missing file of the committed holder
// only at a path the ledger may still write (a target recorded before the
// ledger refused paths among its own files is never created).
func (l *Ledger) recoverTarget(path string, committed []byte) error {
	return lockfile.RecoverFile(path, committed, func() bool {
		if err := l.checkTargetPath(events.Target{Path: path}); err != nil {
			l.log.Warn("not restoring a lock target among the ledger's own files", "path", path, "err", err)
			return false
		}
		l.log.Warn("lock file missing for a held lock; restoring it from the ledger", "path", path)
		return true
	})
}

// reconcileTargets runs recoverTarget for the ledger holder's targets and
// for the targets a request names, then admits the requested ones (with
// force, see admitTargets).
func (w *writeTx) reconcileTargets(requested []events.Target, force bool) error {
	h := w.v.holder
	paths := map[string][]byte{}
	if h != nil && !h.foreign {
		for _, t := range h.targets {
			b, err := renderTarget(t, h)
			if err != nil {
				return err
			}
			paths[t.Path] = b
		}
	}
	asked := map[string]events.Target{}
	for _, t := range requested {
		asked[t.Path] = t
		if _, ok := paths[t.Path]; !ok {
			paths[t.Path] = nil
		}
	}
	if err := w.onlyOwnFiles(len(paths) > 0); err != nil {
		return err
	}
	for p, committed := range paths {
		if err := w.l.recoverTarget(p, committed); err != nil {
			var unsafe *UnsafePathError
			if t, ok := asked[p]; ok && errors.As(err, &unsafe) {
				// Something at a path the caller named that no lock file
				// is (a device, a FIFO, a directory, a symlink): bad input.
				return unsafeTarget(t, unsafe)
			}
			return fmt.Errorf("ledger: target %s: %w", p, err)
		}
	}
	return w.admitTargets(requested, force)
}

// unsafeTarget is the refusal of target t, at or beside whose path is
// something that is not a regular file.
func unsafeTarget(t events.Target, unsafe *UnsafePathError) error {
	what := unsafe.Reason
	if unsafe.Path != t.Path {
		what = "has " + unsafe.Path + " beside it, which " + unsafe.Reason
	}
	return events.Invalid("--file", t.String(), what+"; "+targetRule)
}

// admitTargets refuses a requested target whose path holds anything but
// nothing, the bytes the ledger's holder projects there, or a lock of the
// target's format (which is then that tool's holder, judged by its rules):
// every other file is someone's data, never replaced and never removed.
// With force, a file that does not parse is admitted where the target's
// own tool takes such a file at that path over (BSO's zombie, GitClaw's
// corrupt lock): it is then that tool's unreadable holder, kept aside
// when replaced.
// It runs under the writer mutex, after recovery, before any decision.
func (w *writeTx) admitTargets(ts []events.Target, force bool) error {
	for _, t := range ts {
		cur, err := lockfile.ReadFile(t.Path)
		var unsafe *UnsafePathError
		if errors.As(err, &unsafe) {
			return unsafeTarget(t, unsafe)
		}
		if err != nil {
			return fmt.Errorf("ledger: target %s: %w", t.Path, err)
		}
		if own, ok := ownBytes(w.v.holder, t.Path); !cur.Exists || ok && bytes.Equal(own, cur.Data) {
			continue
		}
		f, err := formats.Lookup(t.Format)
		if err != nil {
			return err
		}
		_, perr := f.Parse(cur.Data)
		takesOver := perr != nil && formats.TakesOverUnreadable(f, t.Path, perr)
		if perr == nil || force && takesOver {
			continue
		}
		rule := targetRule
		if takesOver {
			rule = fmt.Sprintf("%s itself takes over such a file; --force keeps it aside (as %s.corrupt-TIME) and takes the lock", t.Format, t.Path)
		}
		return notALock(t, perr, rule)
	}
	return nil
}

// notALock refuses target t, whose file does not parse (perr) as a lock
// of its format, by rule.
func notALock(t events.Target, perr error, rule string) error {
	return events.Invalid("--file", t.String(), fmt.Sprintf("holds a file that is not a %s lock (%s); %s",
		t.Format, termtext.Clip(perr.Error(), 200), rule))
}

// targetRule is the rule a refused target path broke.
const targetRule = "lockledger writes a --file path only where it holds nothing, the ledger's own lock file, or another tool's lock of that format, and never replaces or removes anything else"

// foreignAt returns the strongest holder among files that the ledger
// holder of the view v of lock does not own at the requested targets'
// paths and at the paths the lock's last holder projected (a lock keeps
// its paths: another tool's lock there holds it), judged at instant now:
// held beats stale beats dead. nil when every path is free (or ours). It
// writes nothing: status and list use it too.
func (l *Ledger) foreignAt(lock string, v *view, requested []events.Target, now time.Time, maxAge time.Duration) (*holding, error) {
	var best *holding
	paths := requested
	if r := v.row; r != nil && !r.Held && l.ownsFiles(r) {
		for _, t := range rowTargets(r) {
			if !slices.ContainsFunc(requested, func(q events.Target) bool { return q.Path == t.Path }) {
				paths = append(paths[:len(paths):len(paths)], t)
			}
		}
	}
	for i, t := range paths {
		remembered := i >= len(requested)
		if _, ours := owns(v.holder, t.Path); ours {
			continue
		}
		cur, err := lockfile.ReadFile(t.Path)
		if err != nil {
			if remembered {
				l.log.Warn("cannot read a path this lock's last holder projected; not judging it", "lock", lock, "path", t.Path, "err", err)
				continue
			}
			return nil, err
		}
		if !cur.Exists {
			continue
		}
		f, err := formats.Lookup(t.Format)
		if err != nil {
			return nil, err
		}
		fh, perr := f.Parse(cur.Data)
		if perr != nil && remembered {
			continue // not a lock of that format: nobody's holder
		}
		verdict := f.Judge(fh, perr, now, l.formatsEnv(maxAge))
		h := foreignFormatHolding(lock, t, fh, perr, cur, verdict)
		if best == nil || stateRank[verdict.State] > stateRank[best.verdict.State] {
			best = h
		}
	}
	return best, nil
}

func foreignFormatHolding(lock string, t events.Target, fh formats.Holder, perr error, cur lockfile.State, v formats.Verdict) *holding {
	fh = formats.Recordable(t.Format, lock, fh)
	h := &holding{rec: formats.ToRecord(fh), created: fh.CreatedAt, heartbeat: fh.HeartbeatAt, file: cur.Data, foreign: true,
		verdict: &v, target: t.Path, targetFormat: t.Format}
	if perr != nil {
		h.corrupt = unreadableFile(cur)
	}
	return h
}

// placeTargets projects h's targets. prev is the holding being replaced
// (nil for a free lock): paths it owned, and a foreign target file being
// taken over, are replaced; any other existing file stops the acquisition
// with errFileExists.
func (w *writeTx) placeTargets(h *holding, prev *holding) error {
	if err := w.onlyOwnFiles(len(h.targets) > 0 || prev != nil && len(prev.targets) > 0); err != nil {
		return err
	}
	for _, t := range h.targets {
		data, err := renderTarget(t, h)
		if err != nil {
			return err
		}
		var j *os.File
		if expect, ok := replaceable(prev, t.Path); ok {
			if err := w.keepUnreadableTarget(prev, t.Path); err != nil {
				return err
			}
			j, err = replaceIfStill(h.rec.LockName, t, expect, data)
		} else {
			j, err = lockfile.PlaceFile(t.Path, data)
		}
		if err != nil {
			return err
		}
		w.addJournal(t.Path, j)
	}
	// Paths the previous holder owned that the new one does not: removed
	// once the take-over has committed.
	if prev != nil && !prev.foreign {
		for _, t := range prev.targets {
			if _, keep := owns(h, t.Path); keep {
				continue
			}
			w.removeAfterCommit(func() error { return removeTarget(t, prev) })
		}
	}
	return nil
}

// keepUnreadableTarget keeps aside the unreadable file of another tool at
// path that prev, being taken over, was judged from (see
// lockfile.KeepAsideFile), before the ledger's file replaces it: the link
// goes again when the decision does not commit, and is named in a warning
// and in the event's note (withKeptAside).
func (w *writeTx) keepUnreadableTarget(prev *holding, path string) error {
	if !prev.foreign || prev.corrupt == nil || prev.target != path {
		return nil
	}
	kept, err := lockfile.KeepAsideFile(path, prev.file, w.now)
	if errors.Is(err, lockfile.ErrChangedMeanwhile) {
		return nil // replaceIfStill judges what is there now
	}
	if err != nil {
		return fmt.Errorf("ledger: keep the unreadable lock file %s aside: %w", path, err)
	}
	prev.keptAside = kept.Path
	w.l.log.Warn("taking over another tool's unreadable lock file; its bytes are kept aside",
		"lock", prev.rec.LockName, "format", prev.targetFormat, "path", path, "kept_aside", kept.Path)
	if aborted := w.aborted; kept.Created {
		w.aborted = func() {
			if aborted != nil {
				aborted()
			}
			if err := lockfile.DropAsideFile(path, kept.Path); err != nil {
				w.l.log.Warn("could not remove a link to an unreadable lock file", "path", kept.Path, "err", err)
			}
		}
	}
	return nil
}

// withKeptAside adds to a take-over's note where the unreadable file of
// prev was kept aside, if it was.
func withKeptAside(note string, prev *holding) string {
	if prev == nil || prev.keptAside == "" {
		return note
	}
	return addNote(note, fmt.Sprintf("the unreadable %s lock file at %s was kept aside as %s", prev.targetFormat, prev.target, prev.keptAside))
}

// addNote adds more to a note, clipped to the 1024 bytes a note may have.
func addNote(note, more string) string {
	return termtext.Clip(strings.TrimPrefix(note+"; "+more, "; "), 1024)
}

// replaceable returns the bytes at path that taking over from prev may
// replace: what prev projects there when the ledger's holder owns the
// path, or the foreign file prev was judged from when it is being taken
// over. ok is false when nothing there may be replaced.
func replaceable(prev *holding, path string) (expect []byte, ok bool) {
	if prev != nil && prev.foreign {
		return prev.file, prev.target == path
	}
	return ownBytes(prev, path)
}

// replaceIfStill replaces the file at t.Path with data only while it holds
// exactly expect (a missing file is placed anew). A file that changed is
// never overwritten: another tool's lock there is a holder, anything else
// is refused as not a lock.
func replaceIfStill(lock string, t events.Target, expect, data []byte) (*os.File, error) {
	cur, err := lockfile.ReadFile(t.Path)
	if err != nil {
		return nil, err
	}
	switch {
	case !cur.Exists:
		return lockfile.PlaceFile(t.Path, data)
	case bytes.Equal(cur.Data, expect):
		return lockfile.ReplaceFile(t.Path, data)
	}
	f, err := formats.Lookup(t.Format)
	if err != nil {
		return nil, err
	}
	fh, perr := f.Parse(cur.Data)
	if perr != nil {
		return nil, notALock(t, perr, targetRule)
	}
	h := foreignFormatHolding(lock, t, fh, nil, cur, formats.Verdict{State: events.StateHeld})
	return nil, &HeldError{Lock: lock, Holder: h.rec, Foreign: true}
}

func removeTarget(t events.Target, h *holding) error {
	data, err := renderTarget(t, h)
	if err != nil {
		return err
	}
	return lockfile.RemoveFile(t.Path, data)
}

// removeTargetsAfterCommit removes h's target files (only those still
// holding its bytes) once the decision has committed.
func (w *writeTx) removeTargetsAfterCommit(h *holding) error {
	if err := w.onlyOwnFiles(len(h.targets) > 0); err != nil {
		return err
	}
	w.removeAfterCommit(func() error {
		for _, t := range h.targets {
			if err := removeTarget(t, h); err != nil {
				return err
			}
		}
		return nil
	})
	return nil
}

// refreshTargets re-renders h's targets after a heartbeat; formats without a
// heartbeat field render the same bytes and are left alone.
func (w *writeTx) refreshTargets(old, renewed *holding) error {
	if err := w.onlyOwnFiles(len(renewed.targets) > 0); err != nil {
		return err
	}
	for _, t := range renewed.targets {
		before, err := renderTarget(t, old)
		if err != nil {
			return err
		}
		after, err := renderTarget(t, renewed)
		if err != nil {
			return err
		}
		if bytes.Equal(before, after) {
			continue
		}
		cur, err := lockfile.ReadFile(t.Path)
		if err != nil {
			return err
		}
		if cur.Exists && !bytes.Equal(cur.Data, before) {
			// Not the file the ledger wrote any more: whatever it is, it
			// is not ours to overwrite.
			w.l.log.Warn("lock target changed by someone else; leaving it alone", "lock", renewed.rec.LockName,
				"format", t.Format, "path", t.Path)
			continue
		}
		j, err := lockfile.ReplaceFile(t.Path, after)
		if err != nil {
			return err
		}
		w.addJournal(t.Path, j)
	}
	return nil
}
