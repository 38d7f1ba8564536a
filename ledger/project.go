package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockledger/lockledger/archive"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
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
	// BrokenChain is the first damage to the event log, when the
	// projection was made from a broken chain with AcceptBrokenChain.
	BrokenChain *verify.Problem `json:"broken_chain,omitempty"`
	// RollbackAccepted is the root's pin this run gave up (WithPin(store.PinAccept)).
	RollbackAccepted *events.Pin `json:"rollback_accepted,omitempty"`
	// Recorded are the seqs of the lock_projected events this run
	// appended: one per lock whose projections it changed.
	Recorded []int64 `json:"recorded"`
	// RunRecorded is the seq of the ledger_projected event that records
	// the run itself (every run has one, changed or not).
	RunRecorded int64 `json:"run_recorded"`
}

// Changed reports whether Project changed anything.
func (r *ProjectReport) Changed() bool { return len(r.Rows) > 0 || len(r.Files) > 0 }

// ProjectOption configures Project.
type ProjectOption func(*projectConfig)

type projectConfig struct {
	id       Identity
	accept   bool
	archives []*archive.Checked
}

// ProjectAs names who projects, as recorded on the lock_projected events
// (empty fields are filled as for any action: a new request id, the
// default actor, this process).
func ProjectAs(id Identity) ProjectOption { return func(c *projectConfig) { c.id = id } }

// AcceptBrokenChain makes Project rebuild the projections even from an
// event log whose chain is broken, as the damaged log now reads; every
// lock_projected event it records says so, with the first bad seq.
func AcceptBrokenChain() ProjectOption { return func(c *projectConfig) { c.accept = true } }

// ProjectFromArchives gives Project the archives (each checked on its own,
// archive.Read) of a pruned ledger's events: every event from seq 1 to
// where the live log starts, the last archive the one the last prune
// recorded. Project folds them before the live log, and the ledger stays
// pruned. Archives that are not that log, or a ledger that is not pruned,
// are refused with an error wrapping archive.ErrMismatch, and nothing
// changes.
func ProjectFromArchives(archives ...*archive.Checked) ProjectOption {
	return func(c *projectConfig) { c.archives = archives }
}

// Project rebuilds the locks table and every lock file from the events
// alone, under the writer mutex, records what it changed and reports it.
//
// It first checks the event log as verify does (chain, seq, schemas,
// columns, replay consistency: replay.VerifyLedger): while the log is
// damaged it refuses with *BrokenChainError and changes no projection
// (it records the refusal, see below), because
// projections rebuilt from a forged log would hide the forgery (unless
// AcceptBrokenChain).
//
// Rows are made exactly as the write path makes them (see replay.Lock.StoreRow);
// files are then reconciled with the rebuilt rows by the same rules every
// write applies (interpret): a held lock's file is placed or replaced, a
// free lock's leftover file of the ledger's is removed, interrupted
// writes' journals are settled. Lock files of other tools are left alone;
// an unreadable file in the locks directory (one that is no v1 lock, so no
// tool's holder) is kept aside as NAME.lock.corrupt-TIME and, for a held
// lock, the ledger's file is put back in its place.
//
// Each lock whose projections change gets one lock_projected event saying
// what changed, appended in the transaction that rewrites the rows, and
// every run gets one ledger_projected after them, in counts: project reads
// the whole audit log, and that access is recorded too. A refusal is
// recorded the same way (result refused), and changes nothing else. The
// file changes follow the commit: a committed row is the truth every
// writer repairs its file from, so a crash in between leaves files the next
// writer (or project) puts right. lock_projected changes no lock state, so
// the rows stay what replay makes of the log.
func (l *Ledger) Project(ctx context.Context, opts ...ProjectOption) (*ProjectReport, error) {
	var c projectConfig
	for _, o := range opts {
		o(&c)
	}
	id, err := l.resolve(c.id, l.now())
	if err != nil {
		return nil, err
	}
	if err := l.settleDisplacements(ctx, id); err != nil {
		return nil, err
	}
	var verifyOpts []replay.VerifyOption
	var archived int64 // the events replayed from the archives
	for _, a := range c.archives {
		archived += a.LastSeq - a.FirstSeq + 1
	}
	if len(c.archives) > 0 {
		// Read before the writer lock is taken: the write folds on from it.
		fold, err := archive.Fold(c.archives)
		if err != nil {
			return nil, fmt.Errorf("ledger: project: %w", err)
		}
		verifyOpts = append(verifyOpts, replay.FoldingFrom(fold))
	}
	var rep *ProjectReport
	var refusal *BrokenChainError
	var applied error // the file changes after the commit: reported with the report
	err = l.update(ctx, func(w *writeTx) (error, error) {
		tx, now := w.tx, w.now
		check, st, err := replay.VerifyLedger(ctx, tx, l.Source(), l.genesis, verifyOpts...)
		if err == nil {
			err = l.joinArchives(check, c.archives)
		}
		if err == nil && st == nil {
			err = fmt.Errorf("%w: give its archives, every one from seq 1, with --archive (ledger_pruned at seq %d recorded the last: sha256 %s)",
				store.ErrPruned, check.Archived.MarkerSeq, check.Archived.ArchiveSHA256)
		}
		if err != nil {
			return nil, fmt.Errorf("ledger: project: %w", err)
		}
		rows, err := store.LoadRows(ctx, tx)
		if err != nil {
			return nil, err
		}
		if p := truncation(rows, st.Seq); p != nil {
			check.Add(*p)
		}
		check.Finish()
		rep = &ProjectReport{Events: check.Events + archived, Locks: st.Len(), Rows: []ProjectChange{}, Files: []ProjectChange{},
			Recorded: []int64{}}
		if bad := check.FirstBad; bad != nil && bad.Kind.Chain() {
			if !c.accept {
				// The refusal is the only change a refused run makes, and
				// no checkpoint signs the damaged log it refuses.
				refusal = &BrokenChainError{FirstBad: *bad, Problems: check.ProblemCount}
				w.unsigned = true
				ev, err := w.append(events.LedgerProjected, id, &events.LedgerProjectedPayload{Result: events.AuditRefused,
					Events: rep.Events, Locks: rep.Locks, Problems: refusal.Problems, FirstBadSeq: max(bad.Seq, 0)})
				if err != nil {
					return nil, err
				}
				refusal.Recorded = ev.Seq
				return refusal, nil
			}
			rep.BrokenChain = bad
			// Stored Merkle hashes of events that are gone would block the
			// seqs the next events take; the cut is accepted, so they go (the
			// checkpoints that covered them stay, and keep showing the cut).
			if err := store.DeleteTreeRowsAbove(ctx, tx, st.Seq); err != nil {
				return nil, fmt.Errorf("ledger: project: %w", err)
			}
			// Events appended without stored hashes are accepted here, and
			// only here: the next checkpoint signs them, and this run's
			// ledger_projected records that they were accepted.
			if _, hashed, err := store.TreeLag(ctx, tx); err != nil {
				return nil, fmt.Errorf("ledger: project: %w", err)
			} else if n, _, err := store.HashTail(ctx, tx, l.log, hashed, 0); err != nil {
				return nil, fmt.Errorf("ledger: project: the Merkle hashes of the accepted events: %w", err)
			} else if n > 0 {
				l.log.Warn("computed the stored Merkle hashes of accepted events that had none", "after_seq", hashed, "events", n)
			}
		}
		// Snapshots of events the log no longer holds (a cut accepted above,
		// a log restored from an older copy without its snapshots) would
		// block, at their seqs, the ones the log's own events make.
		if n, err := store.DeleteStaleSnapshots(ctx, tx, st.Seq); err != nil {
			return nil, fmt.Errorf("ledger: project: %w", err)
		} else if n > 0 {
			l.log.Warn("removed stored snapshots of events the log no longer holds; writes store the log's own", "last_seq", st.Seq, "snapshots", n)
		}
		p := &projection{l: l, rep: rep, now: now, plans: map[string]*lockPlan{}}
		w.aborted = p.dropAsides
		w.committed = func() error {
			l.accepted.Store(true) // the rollback, if any, is recorded: the root may pin the ledger found
			applied = p.apply()
			return nil
		}
		rebuilt, err := p.rows(ctx, tx, st, rows)
		if err != nil {
			return nil, err
		}
		if err := p.files(rebuilt); err != nil {
			return nil, err
		}
		return nil, p.record(w, id, check.ProblemCount)
	})
	if refusal != nil {
		if !errors.Is(err, refusal) {
			l.log.Error("could not record the refused project", "err", err)
			refusal.Recorded = 0
		}
		return nil, refusal
	}
	if err != nil {
		return nil, err
	}
	return rep, applied
}

// joinArchives checks that the archives given to Project and the live log
// verified in check are one log (archive.AgainstLedger's rules, on a
// report of their own, so that a wrong archive is the caller's mistake and
// not damage to this log): none given is nothing to check.
func (l *Ledger) joinArchives(check *verify.Report, archives []*archive.Checked) error {
	switch {
	case len(archives) == 0:
		return nil
	case check.Archived == nil:
		return fmt.Errorf("%w: the ledger is not pruned (its live log holds every event): project needs no archive", archive.ErrMismatch)
	}
	join := &verify.Report{LedgerID: l.id, Archived: check.Archived}
	archive.AgainstLedger(join, l.genesis, archives)
	if bad := join.FirstBad; bad != nil {
		return fmt.Errorf("%w: the archives given and the live log are not one log: seq %d, %s: %s", archive.ErrMismatch, bad.Seq, bad.Kind, bad.Detail)
	}
	return nil
}

// projection is one Project run's plan.
type projection struct {
	l     *Ledger
	rep   *ProjectReport
	now   time.Time
	plans map[string]*lockPlan
}

// lockPlan is what a run changes for one lock: the words of its
// lock_projected event, the unreadable files kept aside (linked before the
// commit, so that the event names files that exist), and the file changes
// to make after the commit.
type lockPlan struct {
	changes []string
	aside   string
	linked  []string // asides this run created: dropped if it does not commit
	apply   []func() error
}

func (p *projection) plan(name string) *lockPlan {
	lp := p.plans[name]
	if lp == nil {
		lp = &lockPlan{}
		p.plans[name] = lp
	}
	return lp
}

// rows rebuilds the locks and lock_holders tables from st in tx, whose
// locks rows are old, and returns the rebuilt rows.
func (p *projection) rows(ctx context.Context, tx *sql.Tx, st *replay.State, old []*store.Row) (map[string]*store.Row, error) {
	wants := lockRows(st)
	rebuilt := map[string]*store.Row{}
	for _, want := range wants {
		rebuilt[want.Name] = want
		if want.Held {
			p.rep.Held++
		}
	}
	var gone []*store.Row
	for _, d := range drifts(wants, old, func(r *store.Row) string { return r.Name }) {
		want, got := d.want, d.got
		var ch ProjectChange
		var words string
		switch {
		case want == nil:
			gone = append(gone, got)
			continue
		case got == nil:
			ch = ProjectChange{Lock: want.Name, Action: "inserted", Detail: store.DescribeRow(want)}
			words = "locks row inserted: " + store.DescribeRow(want)
		default:
			ch = ProjectChange{Lock: want.Name, Action: "updated", Detail: "columns " + strings.Join(d.diff, ", ")}
			words = fmt.Sprintf("locks row: %s -> %s (columns %s)", rowHolder(got), rowHolder(want), strings.Join(d.diff, ", "))
			if rowHolder(got) == rowHolder(want) {
				words = fmt.Sprintf("locks row rewritten: columns %s (%s)", strings.Join(d.diff, ", "), rowHolder(want))
			}
		}
		if err := store.SaveRow(ctx, tx, want); err != nil {
			return nil, err
		}
		p.change(ch, words)
	}
	slices.SortFunc(gone, func(a, b *store.Row) int { return strings.Compare(a.Name, b.Name) })
	for _, got := range gone {
		if err := store.DeleteRow(ctx, tx, got.Name); err != nil {
			return nil, err
		}
		p.change(ProjectChange{Lock: got.Name, Action: "deleted", Detail: "no event gave the ledger this lock"},
			fmt.Sprintf("locks row deleted: it said %s, but no event gave the ledger this lock", store.DescribeRow(got)))
	}
	if err := p.holderRows(ctx, tx, st); err != nil {
		return nil, err
	}
	return rebuilt, nil
}

// change adds ch to the report's row changes, and words to its lock's
// lock_projected.
func (p *projection) change(ch ProjectChange, words string) {
	p.rep.Rows = append(p.rep.Rows, ch)
	p.plan(ch.Lock).changes = append(p.plan(ch.Lock).changes, words)
}

// holderRows rebuilds lock_holders from st's holders, exclusive and shared.
func (p *projection) holderRows(ctx context.Context, tx *sql.Tx, st *replay.State) error {
	old, err := store.LoadAllHolders(ctx, tx)
	if err != nil {
		return err
	}
	for _, d := range drifts(replayHolders(st), old, holderKey) {
		if r := d.got; d.want == nil {
			if err := store.DeleteHolder(ctx, tx, r.Name, r.RequestID); err != nil {
				return err
			}
			p.change(ProjectChange{Lock: r.Name, Action: "deleted", Detail: holderWords(r) + " " + r.RequestID + ": no event gives it the lock"},
				fmt.Sprintf("lock_holders row deleted: %s %s, whom no event gives the lock", holderWords(r), r.RequestID))
			continue
		}
		want := d.want
		if err := store.SaveHolder(ctx, tx, want); err != nil {
			return err
		}
		action := "inserted"
		if d.got != nil {
			action = "updated"
		}
		p.change(ProjectChange{Lock: want.Name, Action: action, Detail: holderWords(want) + " " + want.RequestID},
			fmt.Sprintf("lock_holders row %s: %s %s", action, holderWords(want), want.RequestID))
	}
	return nil
}

// holderWords names a holder row's mode in a change.
func holderWords(r *store.HolderRow) string {
	if r.Exclusive {
		return "exclusive holder"
	}
	return "shared holder"
}

// rowHolder names a row's holder in a change: "holder REQ" or "free".
func rowHolder(r *store.Row) string {
	if r.Held {
		return "holder " + r.RequestID
	}
	return "free"
}

// record appends one lock_projected event per lock the run changes, then
// the run's ledger_projected.
func (p *projection) record(w *writeTx, id Identity, problems int) error {
	for _, name := range slices.Sorted(maps.Keys(p.plans)) {
		lp := p.plans[name]
		if len(lp.changes) == 0 {
			continue
		}
		pl := &events.Projected{Changes: recordable(lp.changes), MovedAside: lp.aside}
		if bad := p.rep.BrokenChain; bad != nil {
			pl.BrokenChainAccepted, pl.FirstBadSeq = true, max(bad.Seq, 0)
		}
		w.v = &view{name: name}
		ev, err := w.append(events.LockProjected, id, pl)
		if err != nil {
			return err
		}
		p.rep.Recorded = append(p.rep.Recorded, ev.Seq)
	}
	run := &events.LedgerProjectedPayload{Result: events.AuditOK, Events: p.rep.Events, Locks: p.rep.Locks,
		RowsChanged: len(p.rep.Rows), FilesChanged: len(p.rep.Files), RollbackAccepted: (*events.Pin)(p.l.rollback)}
	p.rep.RollbackAccepted = run.RollbackAccepted
	if bad := p.rep.BrokenChain; bad != nil {
		run.BrokenChainAccepted, run.Problems, run.FirstBadSeq = true, problems, max(bad.Seq, 0)
	}
	w.v = &view{}
	ev, err := w.append(events.LedgerProjected, id, run)
	if err != nil {
		return err
	}
	p.rep.RunRecorded = ev.Seq
	return nil
}

// Bounds of lock_projected's changes (its schema).
const (
	maxChanges     = 64
	maxChangeBytes = 1024
)

// recordable fits changes into lock_projected's bounds: each at most
// maxChangeBytes (cut at a character boundary), at most maxChanges (the
// last one then says how many more there were).
func recordable(changes []string) []string {
	out := make([]string, 0, min(len(changes), maxChanges))
	for i, c := range changes {
		if i == maxChanges-1 && len(changes) > maxChanges {
			out = append(out, fmt.Sprintf("and %d more changes", len(changes)-i))
			break
		}
		if len(c) > maxChangeBytes {
			c = termtext.Clip(c, maxChangeBytes-len("...")) + "..."
		}
		out = append(out, c)
	}
	return out
}

// settleDisplacements records, as any writer that meets it would, that
// another tool's lock at a path of a held lock has displaced the ledger's
// holder (see recordDisplaced): projections are then rebuilt around the other
// tool's file, which is never touched.
func (l *Ledger) settleDisplacements(ctx context.Context, id Identity) error {
	rows, err := store.LoadRows(ctx, l.store)
	if err != nil {
		return err
	}
	now, err := l.judgeTime(ctx)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if !r.Held {
			continue
		}
		v, err := l.inspect(r.Name, r)
		if err != nil {
			continue // the lock's own problem; verify names it
		}
		if d, err := l.displacedBy(v, now, 0); err != nil || d == nil {
			continue
		}
		if err := l.write(ctx, r.Name, func(w *writeTx) (error, error) {
			return nil, w.recordDisplaced(id, 0)
		}); errors.Is(err, ErrTruncated) || errors.Is(err, ErrUnhashed) {
			return nil // a damaged log: project's own check refuses it, or accepts it first
		} else if err != nil {
			return fmt.Errorf("lock %s: %w", r.Name, err)
		}
	}
	return nil
}
