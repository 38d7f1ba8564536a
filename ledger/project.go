package ledger

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/replay"
)

// ProjectChange is one change project made.
type ProjectChange struct {
	Lock   string `json:"lock_name"`
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
}

// ProjectReport says what Project rebuilt.
type ProjectReport struct {
	Events int64           `json:"events"`
	Locks  int             `json:"locks"`
	Held   int             `json:"held"`
	Rows   []ProjectChange `json:"rows"`
	Files  []ProjectChange `json:"files"`
	// Foreign lists locks whose file the ledger never wrote: left alone.
	Foreign []string `json:"foreign,omitempty"`
	// Interlopers lists locks the ledger holds while another tool's file
	// sits at their path: left alone too (the holder is the ledger's).
	Interlopers []string `json:"interlopers,omitempty"`
}

// Changed reports whether Project changed anything.
func (r *ProjectReport) Changed() bool { return len(r.Rows) > 0 || len(r.Files) > 0 }

// Project rebuilds the locks table and every lock file from the events
// alone, under the writer mutex, and reports what it changed. Rows are
// made exactly as the write path makes them (see rowFromReplay); files
// are then reconciled with the rebuilt rows by the same rules every write
// applies (interpret): a held lock's file is placed or replaced, a free
// lock's leftover file of the ledger's is removed, interrupted writes'
// journals are settled. Lock files the ledger did not write are left alone.
// A body that does not decode stops Project: run verify first.
func (l *Ledger) Project(ctx context.Context) (*ProjectReport, error) {
	unlock, err := l.lockWriter(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ledger: begin: %w", err)
	}
	defer tx.Rollback()
	st, err := replay.AsOf(ctx, tx, time.Time{}, "")
	if err != nil {
		return nil, fmt.Errorf("ledger: project: %w", err)
	}
	old, err := loadRows(ctx, tx)
	if err != nil {
		return nil, err
	}
	rep := &ProjectReport{Events: st.Events, Locks: st.Len(), Rows: []ProjectChange{}, Files: []ProjectChange{}}
	table := map[string]*row{}
	for _, r := range old {
		table[r.name] = r
	}
	rebuilt := map[string]*row{}
	for _, lk := range st.Locks() {
		want := rowFromReplay(lk)
		if want == nil {
			continue
		}
		rebuilt[lk.Name] = want
		if want.held {
			rep.Held++
		}
		got := table[lk.Name]
		delete(table, lk.Name)
		var ch *ProjectChange
		switch {
		case got == nil:
			ch = &ProjectChange{Lock: lk.Name, Action: "inserted", Detail: describeHeld(want)}
		default:
			if d := rowDiff(want, got); len(d) > 0 {
				ch = &ProjectChange{Lock: lk.Name, Action: "updated", Detail: "columns " + strings.Join(d, ", ")}
			}
		}
		if ch == nil {
			continue
		}
		if err := saveRow(ctx, tx, want); err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, *ch)
	}
	for _, name := range sortedKeys(table) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE lock_name = ?`, name); err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, ProjectChange{Lock: name, Action: "deleted", Detail: "no event gave the ledger this lock"})
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ledger: commit: %w", err)
	}
	return rep, l.projectFiles(rebuilt, rep)
}

// projectFiles reconciles every lock file with the rebuilt rows.
func (l *Ledger) projectFiles(rebuilt map[string]*row, rep *ProjectReport) error {
	names, err := l.lockNamesOnDisk()
	if err != nil {
		return err
	}
	for name, r := range rebuilt {
		if r.held {
			names[name] = true
		}
	}
	for _, name := range sortedKeys(rebuilt) {
		if err := l.projectTargets(rebuilt[name], rep); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(names) {
		v, err := l.inspect(name, rebuilt[name])
		if err != nil {
			return fmt.Errorf("ledger: project lock file %s: %w", name, err)
		}
		for _, r := range v.repairs {
			rep.Files = append(rep.Files, ProjectChange{Lock: name, Action: repairAction[r], Detail: l.files.path(name)})
		}
		if v.interloper {
			rep.Interlopers = append(rep.Interlopers, name)
		} else if v.holder != nil && v.holder.foreign {
			rep.Foreign = append(rep.Foreign, name)
		}
		if err := l.applyRepairs(v); err != nil {
			return err
		}
	}
	return nil
}

var repairAction = map[repair]string{
	repairDropPhantom:    "removed an uncommitted file",
	repairDropJournal:    "settled an interrupted write",
	repairPlace:          "placed",
	repairReplace:        "replaced",
	repairRemoveLeftover: "removed",
}

// projectTargets reconciles the extra lock files (other tools' formats) of
// a rebuilt row: interrupted writes are settled and a held lock's missing
// file is placed (recoverTarget, as every write does); a held lock's file
// that is an older version of the holder's own (same request id in its
// format) is replaced; a free lock's file that still holds exactly the
// last holder's bytes is removed. Other files are left alone.
func (l *Ledger) projectTargets(r *row, rep *ProjectReport) error {
	h := holdingFromRow(r)
	for _, t := range h.targets {
		want, err := renderTarget(t, h)
		if err != nil {
			return err
		}
		before, err := readRegular(t.Path)
		if err != nil {
			return fmt.Errorf("ledger: project %s: %w", t.Path, err)
		}
		if !r.held {
			if before.exists && bytes.Equal(before.data, want) {
				if err := removeAt(t.Path, want); err != nil {
					return err
				}
				rep.Files = append(rep.Files, ProjectChange{Lock: r.name, Action: "removed", Detail: t.Path})
			}
			continue
		}
		if err := l.recoverTarget(t.Path, want); err != nil {
			return fmt.Errorf("ledger: project %s: %w", t.Path, err)
		}
		after, err := readRegular(t.Path)
		if err != nil {
			return err
		}
		switch {
		case !before.exists && after.exists:
			rep.Files = append(rep.Files, ProjectChange{Lock: r.name, Action: "placed", Detail: t.Path})
		case after.exists && !bytes.Equal(after.data, want):
			f, err := formats.Lookup(t.Format)
			if err != nil {
				return err
			}
			if fh, perr := f.Parse(after.data); perr != nil || fh.RequestID != r.requestID {
				rep.Interlopers = append(rep.Interlopers, r.name+" ("+t.Path+")")
				continue
			}
			j, err := replaceAt(t.Path, want)
			if err != nil {
				return err
			}
			if err := syncClose(j); err != nil {
				return err
			}
			if err := removeIfExists(journalOf(t.Path)); err != nil {
				return err
			}
			rep.Files = append(rep.Files, ProjectChange{Lock: r.name, Action: "replaced", Detail: t.Path})
		}
	}
	return nil
}
