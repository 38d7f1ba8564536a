package ledger

import (
	"bytes"
	"path/filepath"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/lockfile"
)

// A lock path holds nothing, the bytes the ledger wrote, or another tool's
// lock. When another tool's lock sits at one of the paths of the ledger's
// own holder (its ROOT/locks file or one of its targets), that tool took the
// lock by its own rules: typically after the ledger's holder went stale or
// died (tower-fleet's force, BSO after the pid died, Prodigy's stale
// cleanup). The other tool's file is then the holder, judged by that tool's
// rules, and never overwritten or removed while those rules call it live;
// the ledger records that its own holder was displaced (a forced
// lock_released naming the other holder) the next time a writer meets it.

// displacer is another tool's lock at a path of the ledger's holder.
type displacer struct {
	h      *holding
	format string
	path   string
}

// displacedBy returns the other tool's lock that displaces the ledger's
// holder of v, or nil. The ledger's holder keeps the lock only while it is
// itself live and the other file is not: a live file of another tool always
// wins, since that tool acts on it; an unreadable file is no tool's lock
// (it is left for `project`); an older version of the holder's own file is not another tool's.
func (l *Ledger) displacedBy(v *view, now time.Time, maxAge time.Duration) (*displacer, error) {
	own := v.holder
	if own == nil || own.foreign || v.row != nil && !l.ownsFiles(v.row) {
		return nil, nil
	}
	var best *displacer
	consider := func(c *displacer) {
		if best == nil || stateRank[c.state(now, l)] > stateRank[best.state(now, l)] {
			best = c
		}
	}
	if v.interloper {
		if f := foreignHolding(v.name, v.file); f.corrupt == nil {
			p, err := filepath.Abs(l.files.Path(v.name))
			if err != nil {
				return nil, err
			}
			consider(&displacer{h: f, format: formats.NameTowerFleet, path: p})
		}
	}
	for _, t := range own.targets {
		cur, err := lockfile.ReadFile(t.Path)
		if err != nil {
			return nil, err
		}
		if !cur.Exists {
			continue
		}
		want, err := renderTarget(t, own)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(cur.Data, want) {
			continue
		}
		f, err := formats.Lookup(t.Format)
		if err != nil {
			return nil, err
		}
		fh, perr := f.Parse(cur.Data)
		if perr != nil || sameHolder(fh, own) {
			continue
		}
		verdict := f.Judge(fh, nil, now, l.formatsEnv(maxAge))
		consider(&displacer{h: foreignFormatHolding(v.name, t, fh, nil, cur, verdict), format: t.Format, path: t.Path})
	}
	if best == nil {
		return nil, nil
	}
	ownState, _ := judge(own, now, l.host, l.probe, maxAge)
	if ownState == events.StateHeld && best.state(now, l) != events.StateHeld {
		return nil, nil
	}
	return best, nil
}

var stateRank = map[string]int{events.StateDead: 1, events.StateStale: 2, events.StateHeld: 3}

func (s *displacer) state(now time.Time, l *Ledger) string {
	st, _ := judge(s.h, now, l.host, l.probe, 0)
	return st
}

// sameHolder: a file parsed from one of the holder's targets describes the
// holder itself (an older rendering, e.g. from before a heartbeat).
func sameHolder(fh formats.Holder, own *holding) bool {
	if fh.RequestID == own.rec.RequestID {
		return true
	}
	d := fh.CreatedAt.Sub(own.created)
	return fh.PID == own.rec.PID && d > -time.Second && d < time.Second
}

// recordDisplaced records that the ledger's holder was displaced by
// another tool's lock (see displacedBy), frees the ledger's row, removes the
// holder's files that still hold its bytes, and leaves the other tool's
// lock as the view's holder. id is who noticed.
func (w *writeTx) recordDisplaced(id Identity, maxAge time.Duration) error {
	s, err := w.l.displacedBy(w.v, w.now, maxAge)
	if err != nil || s == nil {
		return err
	}
	if err := w.onlyOwnFiles(true); err != nil {
		return err
	}
	own := w.v.holder
	if err := w.l.files.Remove(w.v.name, own.file); err != nil {
		return err
	}
	for _, t := range own.targets {
		if t.Path == s.path {
			continue
		}
		if err := removeTarget(t, own); err != nil {
			return err
		}
	}
	w.touched = true
	by := events.HolderOf(s.h.rec)
	ev, err := w.append(events.LockReleased, id, &events.Released{
		HeldDurationSeconds: seconds(w.now.Sub(own.created)), Result: events.ResultCancelled, Forced: true,
		ReleasedRequestID: own.rec.RequestID, FencingToken: own.token,
		DisplacedBy: &by, DisplacedByFormat: s.format, DisplacedByPath: s.path,
	})
	if err != nil {
		return err
	}
	if err := w.saveFree(ev.Seq); err != nil {
		return err
	}
	freed := *w.v.row
	freed.Held, freed.UpdatedSeq = false, ev.Seq
	w.v.row, w.v.holder, w.v.interloper = &freed, s.h, false
	w.l.log.Warn("another tool's lock file holds this lock; the ledger's holder is recorded as displaced",
		"lock", w.v.name, "path", s.path, "format", s.format, "displaced", own.rec.RequestID, "by", s.h.rec.RequestID)
	return nil
}
