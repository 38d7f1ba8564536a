package ledger

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockledger/lockledger/internal/backoff"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// checkProjection compares the locks and lock_holders tables, read through
// q (the read snapshot st was replayed from), and the lock files with st,
// the replay of every event, and adds what disagrees to rep:
//
//   - a lock the ledger ever held exclusively by replay must have an
//     identical row (every column, held or free); a row for a lock the
//     events never gave the ledger is drift too;
//   - every holder, exclusive or shared, must have an identical row of
//     lock_holders, and no other row may be there (checkHolders);
//   - every lock file must be what the table says: the holder's exact bytes
//     for a held lock (missing, different, or another tool's file there),
//     no file of the ledger's for a free one (extra). Files the ledger never
//     wrote at locks it does not hold are listed as foreign, not damage.
//
// The files are read after the snapshot; a file that disagrees is read
// again with the table's latest row, so that a write committed meanwhile
// is not reported. A write in flight (its journal present) is noted.
func (l *Ledger) checkProjection(ctx context.Context, q replay.Querier, st *replay.State, rep *verify.Report) error {
	rows, err := store.LoadRows(ctx, q)
	if err != nil {
		return rep.ReadFailure(ctx, "the locks table", err)
	}
	if p := truncation(rows, st.Seq); p != nil {
		rep.Add(*p)
	}
	if marker, err := l.files.Marker(); err == nil && marker != "" && marker != l.id {
		rep.Add(verify.Problem{Kind: verify.KindSwapped, Detail: fmt.Sprintf(
			"%s is ledger %s, but this root's %s records ledger %s: the database was replaced by another ledger's",
			filepath.Join(l.root, DBFile), l.id, WriterMux, termtext.Clip(marker, 64))})
	}
	if b := l.behind; b != nil {
		rep.Add(pinProblem(b))
	}
	for _, d := range drifts(lockRows(st), rows, func(r *store.Row) string { return r.Name }) {
		switch want, got := d.want, d.got; {
		case want == nil && st.Lock(got.Name) != nil:
			rep.Add(drifted(got.UpdatedSeq, got.Name, "the locks table says %s, but no event ever gave the ledger this lock", store.DescribeRow(got)))
		case want == nil:
			rep.Add(drifted(got.UpdatedSeq, got.Name, "the locks table says %s, but no event names this lock", store.DescribeRow(got)))
		case got == nil:
			rep.Add(drifted(want.UpdatedSeq, want.Name, "replay says %s, but the locks table has no row", store.DescribeRow(want)))
		default:
			// Held or free, a lock's row keeps its last exclusive holding's
			// file: the fencing token, and the request a leftover lock file
			// of the ledger's is told by. Who holds it is checkHolders'.
			rep.Add(drifted(want.UpdatedSeq, want.Name, "the locks table differs from replay in %s", strings.Join(d.diff, ", ")))
		}
	}
	if err := checkHolders(ctx, q, st, rep); err != nil {
		return err
	}
	return l.checkFiles(ctx, rows, rep)
}

// drifted is a projection table's drift from replay at seq, of lock.
func drifted(seq int64, lock, format string, args ...any) verify.Problem {
	return verify.Problem{Seq: seq, Kind: verify.KindProjectionDrift, Lock: lock, Detail: fmt.Sprintf(format, args...)}
}

// tableRow is a row of a projection table: the locks table's, or
// lock_holders'.
type tableRow[R any] interface {
	comparable
	Diff(R) []string
}

// drift is a row of a projection table (got) against the row replay makes
// of it (want): want nil, a row replay makes none of; got nil, a row
// missing; else diff, the columns that differ.
type drift[R any] struct {
	want, got R
	diff      []string
}

// drifts walks the rows replay makes (wants) against a table's rows
// (gots), matched by key: every want whose row is missing or differs, in
// wants' order, then every row no want matches, in gots' order. The
// projection writer (project) and its checker (verify) both take this walk.
func drifts[R tableRow[R], K comparable](wants, gots []R, key func(R) K) (out []drift[R]) {
	table := map[K]R{}
	for _, g := range gots {
		table[key(g)] = g
	}
	for _, w := range wants {
		g, ok := table[key(w)]
		delete(table, key(w))
		var d []string
		if ok {
			d = w.Diff(g)
		}
		if !ok || len(d) > 0 {
			out = append(out, drift[R]{want: w, got: g, diff: d})
		}
	}
	for _, g := range gots {
		if _, ok := table[key(g)]; ok {
			out = append(out, drift[R]{got: g})
		}
	}
	return out
}

// lockRows are the locks rows st's locks make, by lock name.
func lockRows(st *replay.State) []*store.Row {
	var out []*store.Row
	for _, lk := range st.Locks() {
		if r := lk.StoreRow(); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// truncation reports a tail of the log that is gone, as the locks table
// shows it: a row updated by an event after the last one (head).
func truncation(rows []*store.Row, head int64) *verify.Problem {
	var last *store.Row
	for _, r := range rows {
		if r.UpdatedSeq > head && (last == nil || r.UpdatedSeq > last.UpdatedSeq) {
			last = r
		}
	}
	if last == nil {
		return nil
	}
	return &verify.Problem{Seq: head + 1, Kind: verify.KindTruncated, Lock: last.Name, Detail: fmt.Sprintf(
		"the log ends at seq %d, but the locks table records lock %s as updated by seq %d: events %d-%d (at least) are gone",
		head, last.Name, last.UpdatedSeq, head+1, last.UpdatedSeq)}
}

// pinProblem is what the root's pin knows of a ledger a writer here would
// refuse (store.LookPin): the database replaced by another ledger's, or
// this ledger put back to before a head this host saw, by a restore or a
// rollback that a log without a checkpoint past it cannot show.
func pinProblem(b *store.RolledBackError) verify.Problem {
	p := verify.Problem{Kind: verify.KindSwapped}
	switch {
	case b.Found.LedgerID != b.Pinned.LedgerID:
	case b.Found.Seq < b.Pinned.Seq:
		p.Kind, p.Seq = verify.KindTruncated, b.Found.Seq+1
	default:
		p.Kind, p.Seq = verify.KindModified, b.Pinned.Seq
	}
	p.Detail = fmt.Sprintf("this root's pin (%s) records %s, the newest head this host saw, but the database holds %s: %s. %s",
		b.Pin, b.Pinned, b.Found, b.Reason, b.Advice())
	return p
}

func (l *Ledger) checkFiles(ctx context.Context, rows []*store.Row, rep *verify.Report) error {
	byName := map[string]*store.Row{}
	names, err := l.files.LockNames(true)
	if err != nil {
		// The locks the table holds are still checked (and found unreadable).
		rep.Add(verify.Problem{Kind: verify.KindLockFileUnreadable, Detail: fmt.Sprintf(
			"the lock files cannot be listed: %v", err)})
		names = map[string]bool{}
	}
	remote := map[string]bool{}
	for _, r := range rows {
		if !l.ownsFiles(r) {
			remote[r.Name] = true // its host checks its files
			continue
		}
		byName[r.Name] = r
		if r.Held {
			names[r.Name] = true
		}
		if err := l.checkTargets(ctx, r, rep); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if remote[name] {
			continue
		}
		if err := l.settled(ctx, rep, name, byName[name], func(fresh *store.Row) (*verify.Problem, string, error) {
			return l.checkFile(name, fresh)
		}); err != nil {
			return err
		}
	}
	return nil
}

// settled counts a file of lock name and adds to rep what judge says of
// it, against its row r in the snapshot and, when that disagrees, against
// the latest committed row: the ledger may have moved on since the
// snapshot, so it judges again for as long as the row keeps moving (see
// settle).
func (l *Ledger) settled(ctx context.Context, rep *verify.Report, name string, r *store.Row,
	judge func(*store.Row) (*verify.Problem, string, error)) error {
	rep.LockFiles++
	p, note, err := judge(r)
	// A foreign file is no write of the ledger's, and no write makes a path unreadable: neither settles.
	if err == nil && p != nil && p.Kind != verify.KindForeign && p.Kind != verify.KindLockFileUnreadable {
		p, note, err = settle(ctx, l, name, judge)
	}
	switch {
	case err != nil:
		return err
	case note != "":
		rep.Notes = append(rep.Notes, note)
	case p != nil:
		rep.Add(*p)
	}
	return nil
}

// unreadable is the problem of a lock whose file or journal the ledger
// cannot read (err) as a regular file.
func unreadable(name string, r *store.Row, err error) *verify.Problem {
	p := &verify.Problem{Kind: verify.KindLockFileUnreadable, Lock: name, Detail: err.Error()}
	if r != nil {
		p.Seq = r.UpdatedSeq
		if r.Held {
			p.Detail = fmt.Sprintf("the ledger holds the lock (request %s) but its file cannot be read: %v", r.RequestID, err)
		}
	}
	return p
}

// checkFile judges one lock file against its table row, by what every
// writer makes of it (interpret): a repair it would make, or a file of
// another tool's, is what verify reports.
func (l *Ledger) checkFile(name string, r *store.Row) (*verify.Problem, string, error) {
	f, err := l.files.Read(name)
	var journal lockfile.State
	if err == nil {
		journal, err = l.files.ReadJournal(name)
	}
	if err != nil {
		return unreadable(name, r, err), "", nil
	}
	if journal.Exists {
		return nil, inFlight(name, l.files.JournalPath(name)), nil
	}
	v, path, problem := interpret(name, r, f, journal), l.files.Path(name), fileProblem(r)
	switch {
	case slices.Contains(v.repairs, repairPlace):
		return problem(verify.KindLockFileMissing, "the ledger holds the lock (request %s) but %s is missing", r.RequestID, path)
	case slices.Contains(v.repairs, repairReplace):
		return problem(verify.KindLockFileDifferent, "%s is request %s's but not the bytes the ledger wrote", path, r.RequestID)
	case v.interloper:
		return problem(verify.KindForeignAtHeld, "the ledger holds the lock (request %s) but %s is %s", r.RequestID, path, foreignSummary(f.Data))
	case slices.Contains(v.repairs, repairRemoveLeftover):
		return problem(verify.KindLockFileExtra, "%s is request %s's, but the ledger released the lock", path, r.RequestID)
	case v.holder != nil && v.holder.foreign && l.behind != nil:
		// The file may be the ledger's own, written by an event the
		// database no longer holds: no other tool's to name.
		return &verify.Problem{Kind: verify.KindForeign, Lock: name, Detail: fmt.Sprintf(
			"%s is a lock file the ledger does not hold (%s), perhaps %s; left alone",
			path, lockFileHolder(f.Data), l.behind.Theirs())}, "", nil
	case v.holder != nil && v.holder.foreign:
		return &verify.Problem{Kind: verify.KindForeign, Lock: name, Detail: fmt.Sprintf("%s is %s; left alone", path, foreignSummary(f.Data))}, "", nil
	}
	return nil, "", nil
}

// inFlight is verify's note on lock, whose file's journal is there.
func inFlight(lock, journal string) string {
	return fmt.Sprintf("lock %s: a write is in flight or was interrupted (%s exists); the next write to the lock, or project, settles it", lock, journal)
}

// fileProblem makes the problems of a file of r's lock, as a judge of it returns them.
func fileProblem(r *store.Row) func(kind verify.Kind, format string, args ...any) (*verify.Problem, string, error) {
	return func(kind verify.Kind, format string, args ...any) (*verify.Problem, string, error) {
		return &verify.Problem{Seq: r.UpdatedSeq, Kind: kind, Lock: r.Name, Detail: fmt.Sprintf(format, args...)}, "", nil
	}
}

func foreignSummary(data []byte) string {
	if _, err := ParseLockFile(data); err != nil {
		return "an unreadable lock file the ledger did not write"
	}
	return "a lock file the ledger did not write (" + lockFileHolder(data) + ")"
}

// lockFileHolder names the holder a lock file records.
func lockFileHolder(data []byte) string {
	rec, err := ParseLockFile(data)
	if err != nil {
		return "unreadable"
	}
	return fmt.Sprintf("request %s, actor %s, pid %d on %s", rec.RequestID, rec.Actor, rec.PID, rec.HostID)
}

// checkTargets judges the extra lock files (other tools' formats) that a
// row's holder projects: each must hold exactly the bytes the holder
// renders there while the lock is held; a file still holding the last
// holder's bytes after the release is extra. Anything else at the path of a
// free lock is another tool's business.
func (l *Ledger) checkTargets(ctx context.Context, r *store.Row, rep *verify.Report) error {
	for _, t := range rowTargets(r) {
		if err := l.settled(ctx, rep, r.Name, r, func(row *store.Row) (*verify.Problem, string, error) {
			return l.checkTarget(t.Path, row)
		}); err != nil {
			return err
		}
	}
	return nil
}

// checkTarget judges the file at path against row r, where r's holder
// projects it.
func (l *Ledger) checkTarget(path string, r *store.Row) (*verify.Problem, string, error) {
	if r == nil {
		return nil, "", nil
	}
	h := holdingFromRow(r)
	t, ok := owns(h, path)
	if !ok {
		return nil, "", nil // the lock's holder no longer projects this path
	}
	journal, err := lockfile.ReadFile(lockfile.JournalOf(t.Path))
	if err != nil {
		return &verify.Problem{Kind: verify.KindLockFileUnreadable, Lock: r.Name, Detail: err.Error()}, "", nil
	}
	if journal.Exists {
		return nil, inFlight(r.Name, lockfile.JournalOf(t.Path)), nil
	}
	want, err := renderTarget(t, h)
	if err != nil {
		return nil, "", err
	}
	f, err := lockfile.ReadFile(t.Path)
	if err != nil {
		return &verify.Problem{Kind: verify.KindLockFileUnreadable, Lock: r.Name, Detail: err.Error()}, "", nil
	}
	problem := fileProblem(r)
	switch {
	case r.Held && !f.Exists:
		return problem(verify.KindLockFileMissing, "the ledger holds the lock (request %s) but its %s file %s is missing", r.RequestID, t.Format, t.Path)
	case r.Held && !bytes.Equal(f.Data, want):
		return problem(verify.KindLockFileDifferent, "%s (%s) is not what request %s projects there (an old version, or another tool's file)", t.Path, t.Format, r.RequestID)
	case !r.Held && f.Exists && bytes.Equal(f.Data, want):
		return problem(verify.KindLockFileExtra, "%s (%s) is request %s's, but the ledger released the lock", t.Path, t.Format, r.RequestID)
	}
	return nil, "", nil
}

// settleWithin bounds how long a disagreeing file is watched before it is
// reported. A release removes its lock file before its transaction commits,
// and leaves no journal (nothing to undo): for that instant the table says
// held and the file is gone, exactly like a deleted file. Only time tells
// them apart: the release commits within moments, a deletion stays.
const settleWithin = time.Second

// settle judges a lock's file against the latest committed row until the
// judgement holds across a row that did not change for settleWithin (or the
// file agrees). A write committed meanwhile makes it judge again at once.
func settle(ctx context.Context, l *Ledger, name string, judge func(*store.Row) (*verify.Problem, string, error)) (*verify.Problem, string, error) {
	deadline := time.Now().Add(settleWithin)
	retry := backoff.Backoff{Min: time.Millisecond, Max: 100 * time.Millisecond}
	for {
		before, err := store.LoadRow(ctx, l.store, name)
		if err != nil {
			return nil, "", err
		}
		p, note, err := judge(before)
		if err != nil || p == nil {
			return p, note, err
		}
		after, err := store.LoadRow(ctx, l.store, name)
		if err != nil {
			return nil, "", err
		}
		if !store.SameVersion(before, after) {
			if time.Now().After(deadline) {
				return nil, fmt.Sprintf("lock %s: changed on every look while verify read it; re-run verify to check its files", name), nil
			}
			continue // a write committed between the reads: judge the new state
		}
		if time.Now().After(deadline) {
			return p, "", nil
		}
		if err := retry.Wait(ctx); err != nil {
			return nil, "", err
		}
	}
}
