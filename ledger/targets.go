package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
)

// Targets are extra lock files in other tools' formats (--file FORMAT:PATH)
// that a holding projects besides ROOT/locks/NAME.lock. They are recorded
// in the acquiring event, placed, replaced and removed with the same
// journal-and-link rules as the primary file, and a file already at a
// target's path that the ledger did not write is a holder, judged by its
// own format's rules.

// ValidateTargets checks targets: known formats, absolute clean paths, no
// duplicates, none inside the ledger's own locks directory.
func (l *Ledger) ValidateTargets(ts []events.Target) error {
	seen := map[string]bool{}
	for _, t := range ts {
		if _, err := formats.Lookup(t.Format); err != nil {
			return events.Invalid("--file", t.Format+":"+t.Path, err.Error())
		}
		if !filepath.IsAbs(t.Path) || filepath.Clean(t.Path) != t.Path {
			return events.Invalid("--file", t.Format+":"+t.Path, "path must be absolute and clean")
		}
		if seen[t.Path] {
			return events.Invalid("--file", t.Format+":"+t.Path, "the same path is given twice")
		}
		seen[t.Path] = true
		if dir, _ := filepath.Abs(l.files.dir); filepath.Dir(t.Path) == dir {
			return events.Invalid("--file", t.Format+":"+t.Path, "must not be inside the ledger's locks directory")
		}
	}
	return nil
}

func formatHolder(h *holding) formats.Holder {
	return formats.Holder{Lock: h.rec.LockName, RequestID: h.rec.RequestID, Actor: h.rec.Actor, Intent: h.rec.Intent,
		IntentVersion: h.rec.IntentVersion, HostID: h.rec.HostID, PID: h.rec.PID, CreatedAt: h.created,
		HeartbeatAt: h.heartbeat, TTL: time.Duration(h.rec.TTLSeconds) * time.Second, Metadata: h.rec.Metadata}
}

// ReadTargetFile reads a lock file at path without following symlinks;
// exists is false when there is none.
func ReadTargetFile(path string) (data []byte, exists bool, err error) {
	st, err := readRegular(path)
	return st.data, st.exists, err
}

// TargetsOf returns the targets the ledger's current holder of lock projects.
func (l *Ledger) TargetsOf(ctx context.Context, lock string) ([]events.Target, error) {
	r, err := loadRow(ctx, l.db, lock)
	if err != nil || r == nil || !r.held {
		return nil, err
	}
	return holdingFromRow(r).targets, nil
}

// renderTarget is the exact file a holding projects at target t.
func renderTarget(t events.Target, h *holding) ([]byte, error) {
	f, err := formats.Lookup(t.Format)
	if err != nil {
		return nil, err
	}
	return f.Render(formatHolder(h))
}

// LocalEnv is the formats.Env of this host with the real process probe.
func LocalEnv(maxAge time.Duration) formats.Env {
	return envFor(ThisHost(), &procProbe{}, maxAge)
}

func (l *Ledger) formatsEnv(maxAge time.Duration) formats.Env {
	return envFor(l.host, l.probe, maxAge)
}

func envFor(host Host, probe ProcessProbe, maxAge time.Duration) formats.Env {
	return formats.Env{HostID: host.ID, MaxAge: maxAge, Probe: func(pid int) formats.Liveness {
		live, _ := probe.Probe(pid)
		switch live {
		case Alive:
			return formats.Alive
		case Gone:
			return formats.Gone
		}
		return formats.Unknown
	}}
}

func owns(h *holding, path string) (events.Target, bool) {
	if h == nil || h.foreign {
		return events.Target{}, false
	}
	for _, t := range h.targets {
		if t.Path == path {
			return t, true
		}
	}
	return events.Target{}, false
}

// recoverTarget undoes or finishes a file change at path that a process
// left behind (see lockFiles), given the bytes the committed holder
// projects there (nil if none), and restores a missing file of a holder.
func (l *Ledger) recoverTarget(path string, committed []byte) error {
	journal, err := readRegular(journalOf(path))
	if err != nil {
		return err
	}
	file, err := readRegular(path)
	if err != nil {
		return err
	}
	if journal.exists {
		if !bytes.Equal(journal.data, committed) && file.exists && file.ino == journal.ino {
			if err := removeIfExists(path); err != nil {
				return err
			}
			file = fileState{}
		}
		if err := removeIfExists(journalOf(path)); err != nil {
			return err
		}
		if err := removeIfExists(swapOf(path)); err != nil {
			return err
		}
	}
	if committed != nil && !file.exists {
		l.log.Warn("lock file missing for a held lock; restoring it from the ledger", "path", path)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		j, err := placeAt(path, committed)
		if errors.Is(err, errFileExists) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := syncClose(j); err != nil {
			return err
		}
		return removeIfExists(journalOf(path))
	}
	return nil
}

// reconcileTargets runs recoverTarget for the ledger holder's targets and
// for the targets a request names.
func (w *writeTx) reconcileTargets(requested []events.Target) error {
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
	for _, t := range requested {
		if _, ok := paths[t.Path]; !ok {
			paths[t.Path] = nil
		}
	}
	for p, committed := range paths {
		if err := w.l.recoverTarget(p, committed); err != nil {
			return fmt.Errorf("ledger: target %s: %w", p, err)
		}
	}
	return nil
}

// foreignTarget returns the strongest holder among files that the ledger
// holder does not own at the requested targets' paths and at the paths the
// lock's last holder projected (a lock keeps its paths: another tool's lock
// there holds it): held beats stale beats dead. nil when every path is free
// (or ours).
func (w *writeTx) foreignTarget(req AcquireRequest) (*holding, error) {
	var best *holding
	rank := stateRank
	paths := req.Targets
	requested := len(paths)
	if r := w.v.row; r != nil && !r.held {
		seen := map[string]bool{}
		for _, t := range paths {
			seen[t.Path] = true
		}
		for _, t := range holdingFromRow(r).targets {
			if !seen[t.Path] {
				paths = append(paths[:len(paths):len(paths)], t)
			}
		}
	}
	for i, t := range paths {
		remembered := i >= requested
		if _, ours := owns(w.v.holder, t.Path); ours {
			continue
		}
		cur, err := readRegular(t.Path)
		if err != nil {
			if remembered {
				w.l.log.Warn("cannot read a path this lock's last holder projected; not judging it", "lock", req.Lock, "path", t.Path, "err", err)
				continue
			}
			return nil, err
		}
		if !cur.exists {
			continue
		}
		f, err := formats.Lookup(t.Format)
		if err != nil {
			return nil, err
		}
		fh, perr := f.Parse(cur.data)
		if perr != nil && remembered {
			continue // not a lock of that format: nobody's holder
		}
		v := f.Judge(fh, perr, w.now, w.l.formatsEnv(req.MaxAge))
		h := foreignFormatHolding(req.Lock, t, fh, perr, cur.data, v)
		if best == nil || rank[v.State] > rank[best.verdict.State] {
			best = h
		}
	}
	return best, nil
}

func foreignFormatHolding(lock string, t events.Target, fh formats.Holder, perr error, data []byte, v formats.Verdict) *holding {
	rid := fh.RequestID
	if events.ValidateRequestID(rid) != nil {
		rid = formats.ForeignRequestID(t.Format, fh.PID, fh.CreatedAt)
	}
	ttl := int64(fh.TTL / time.Second)
	if ttl < 1 {
		ttl = 1
	}
	actor, host := fh.Actor, fh.HostID
	if actor == "" {
		actor = t.Format
	}
	if host == "" {
		host = "unknown"
	}
	created, hb := fh.CreatedAt, fh.HeartbeatAt
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	if hb.IsZero() {
		hb = created
	}
	md := fh.Metadata
	if md == nil {
		md = map[string]string{}
	}
	rec := events.Record{LockVersion: events.LockVersion, LockName: lock, RequestID: rid, Actor: actor,
		Intent: fh.Intent, IntentVersion: fh.IntentVersion, HostID: host, PID: max(fh.PID, 0),
		CreatedAt: events.FormatLockTime(created), LastHeartbeatAt: events.FormatLockTime(hb), TTLSeconds: ttl, Metadata: md}
	return &holding{rec: rec, created: created, heartbeat: hb, file: data, foreign: true, corrupt: perr != nil,
		verdict: &v, target: t.Path}
}

// placeTargets projects h's targets. prev is the holding being replaced
// (nil for a free lock): paths it owned, and a foreign target file being
// taken over, are replaced; any other existing file stops the acquisition
// with errFileExists.
func (w *writeTx) placeTargets(h *holding, prev *holding) error {
	for _, t := range h.targets {
		data, err := renderTarget(t, h)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(t.Path), 0o700); err != nil {
			return err
		}
		_, ours := owns(prev, t.Path)
		takeover := prev != nil && prev.foreign && prev.target == t.Path
		var j *os.File
		if ours || takeover {
			j, err = replaceAt(t.Path, data)
		} else {
			j, err = placeAt(t.Path, data)
		}
		if err != nil {
			return err
		}
		w.addJournal(t.Path, j)
	}
	// Paths the previous holder owned that the new one does not: remove.
	if prev != nil && !prev.foreign {
		for _, t := range prev.targets {
			if _, keep := owns(h, t.Path); keep {
				continue
			}
			if err := removeTarget(t, prev); err != nil {
				return err
			}
		}
	}
	return nil
}

func removeTarget(t events.Target, h *holding) error {
	data, err := renderTarget(t, h)
	if err != nil {
		return err
	}
	return removeAt(t.Path, data)
}

// removeTargets deletes h's target files (only those still holding its bytes).
func (w *writeTx) removeTargets(h *holding) error {
	for _, t := range h.targets {
		if err := removeTarget(t, h); err != nil {
			return err
		}
	}
	return nil
}

// refreshTargets re-renders h's targets after a heartbeat; formats without a
// heartbeat field render the same bytes and are left alone.
func (w *writeTx) refreshTargets(old, renewed *holding) error {
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
		if cur, err := readRegular(t.Path); err != nil {
			return err
		} else if cur.exists && !bytes.Equal(cur.data, before) {
			w.l.log.Warn("a target file no longer holds what the ledger wrote; leaving it alone", "path", t.Path)
			continue
		}
		j, err := replaceAt(t.Path, after)
		if err != nil {
			return err
		}
		w.addJournal(t.Path, j)
	}
	return nil
}
