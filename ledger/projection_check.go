package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/replay"
)

// rowFromReplay is the locks row the ledger's write path leaves for a lock
// replay folded: saveHolder's row for a held lock, saveFree's (the last
// holder's row with held = 0) for a free one. nil when the ledger never
// held the lock (no row).
func rowFromReplay(lk *replay.Lock) *row {
	h := lk.Holder
	if h == nil {
		return nil
	}
	md, err := json.Marshal(h.Record.Metadata)
	if err != nil {
		md = []byte("{}") // a map of strings always marshals
	}
	targets := h.Targets
	if targets == nil {
		targets = []events.Target{}
	}
	tj, err := json.Marshal(targets)
	if err != nil {
		tj = []byte("[]") // strings only: always marshals
	}
	return &row{targets: string(tj),
		name: lk.Name, held: lk.Held, requestID: h.Record.RequestID, actor: h.Record.Actor, intent: h.Record.Intent,
		intentVersion: h.Record.IntentVersion, hostID: h.Record.HostID, pid: h.Record.PID, pidStart: h.PIDStart,
		bootID: h.BootID, createdAt: events.FormatTime(h.Created), heartbeatAt: events.FormatTime(h.Heartbeat),
		ttlSeconds: h.Record.TTLSeconds, metadata: string(md), fencingToken: h.Token, updatedSeq: lk.UpdatedSeq,
		file: h.File(),
	}
}

// rowDiff names the columns in which two rows differ.
func rowDiff(a, b *row) []string {
	var d []string
	add := func(name string, same bool) {
		if !same {
			d = append(d, name)
		}
	}
	add("held", a.held == b.held)
	add("request_id", a.requestID == b.requestID)
	add("actor", a.actor == b.actor)
	add("intent", a.intent == b.intent)
	add("intent_version", a.intentVersion == b.intentVersion)
	add("host_id", a.hostID == b.hostID)
	add("pid", a.pid == b.pid)
	add("pid_start", a.pidStart == b.pidStart)
	add("boot_id", a.bootID == b.bootID)
	add("created_at", a.createdAt == b.createdAt)
	add("heartbeat_at", a.heartbeatAt == b.heartbeatAt)
	add("ttl_seconds", a.ttlSeconds == b.ttlSeconds)
	add("metadata", a.metadata == b.metadata)
	add("fencing_token", a.fencingToken == b.fencingToken)
	add("updated_seq", a.updatedSeq == b.updatedSeq)
	add("file", bytes.Equal(a.file, b.file))
	add("targets", a.targetsJSON() == b.targetsJSON())
	return d
}

func describeHeld(r *row) string {
	if r == nil {
		return "no row"
	}
	if r.held {
		return fmt.Sprintf("held by request %s (actor %s, seq %d)", r.requestID, r.actor, r.updatedSeq)
	}
	return fmt.Sprintf("free (seq %d)", r.updatedSeq)
}

// checkProjection compares the locks table, read through q (the read
// snapshot st was replayed from), and the lock files with st, the replay
// of every event, and adds what disagrees to rep:
//
//   - a lock the ledger ever held by replay must have an identical row
//     (every column, held or free); a row for a lock the events never gave
//     the ledger is drift too;
//   - every lock file must be what the table says: the holder's exact bytes
//     for a held lock (missing, different, or another tool's file there),
//     no file of the ledger's for a free one (extra). Files the ledger never
//     wrote at locks it does not hold are listed as foreign, not damage.
//
// The files are read after the snapshot; a file that disagrees is read
// again with the table's latest row, so that a write committed meanwhile
// is not reported. A write in flight (its journal present) is noted.
func (l *Ledger) checkProjection(ctx context.Context, q replay.Querier, st *replay.State, rep *replay.Report) error {
	rows, err := loadRows(ctx, q)
	if err != nil {
		return rep.ReadFailure(ctx, "the locks table", err)
	}
	table := map[string]*row{}
	for _, r := range rows {
		table[r.name] = r
	}
	if p := truncation(rows, st.Seq); p != nil {
		rep.Add(*p)
	}
	if marker, err := l.files.Marker(); err == nil && marker != "" && marker != l.id {
		rep.Add(replay.Problem{Kind: replay.KindSwapped, Detail: fmt.Sprintf(
			"%s is ledger %s, but this root's %s records ledger %s: the database was replaced by another ledger's",
			filepath.Join(l.root, DBFile), l.id, WriterMux, clip(marker, 64))})
	}
	for _, lk := range st.Locks() {
		want := rowFromReplay(lk)
		got := table[lk.Name]
		switch {
		case want == nil && got == nil:
			continue
		case want == nil:
			rep.Add(replay.Problem{Seq: got.updatedSeq, Kind: replay.KindProjectionDrift, Lock: lk.Name, Detail: fmt.Sprintf(
				"the locks table says %s, but no event ever gave the ledger this lock", describeHeld(got))})
		case got == nil:
			rep.Add(replay.Problem{Seq: want.updatedSeq, Kind: replay.KindProjectionDrift, Lock: lk.Name, Detail: fmt.Sprintf(
				"replay says %s, but the locks table has no row", describeHeld(want))})
		case want.held != got.held:
			rep.Add(replay.Problem{Seq: want.updatedSeq, Kind: replay.KindProjectionDrift, Lock: lk.Name, Detail: fmt.Sprintf(
				"replay says %s, the locks table says %s", describeHeld(want), describeHeld(got))})
		default:
			// A free row keeps its last holder: the fencing token the next
			// holder's follows from, and the request a leftover lock file of
			// the ledger's is told by. Every column counts, as for a held one.
			if d := rowDiff(want, got); len(d) > 0 {
				rep.Add(replay.Problem{Seq: want.updatedSeq, Kind: replay.KindProjectionDrift, Lock: lk.Name, Detail: fmt.Sprintf(
					"the locks table differs from replay in %s", strings.Join(d, ", "))})
			}
		}
		delete(table, lk.Name)
	}
	for _, name := range sortedKeys(table) {
		got := table[name]
		rep.Add(replay.Problem{Seq: got.updatedSeq, Kind: replay.KindProjectionDrift, Lock: name, Detail: fmt.Sprintf(
			"the locks table says %s, but no event names this lock", describeHeld(got))})
	}
	if err := checkShared(ctx, q, st, rep); err != nil {
		return err
	}
	return l.checkFiles(ctx, rows, rep)
}

// truncation reports a tail of the log that is gone, as the locks table
// shows it: a row updated by an event after the last one (head).
func truncation(rows []*row, head int64) *replay.Problem {
	var last *row
	for _, r := range rows {
		if r.updatedSeq > head && (last == nil || r.updatedSeq > last.updatedSeq) {
			last = r
		}
	}
	if last == nil {
		return nil
	}
	return &replay.Problem{Seq: head + 1, Kind: replay.KindTruncated, Lock: last.name, Detail: fmt.Sprintf(
		"the log ends at seq %d, but the locks table records lock %s as updated by seq %d: events %d-%d (at least) are gone",
		head, last.name, last.updatedSeq, head+1, last.updatedSeq)}
}

// lockNamesOnDisk lists the lock names that have a file or a journal in
// the locks directory.
func (l *Ledger) lockNamesOnDisk() (map[string]bool, error) {
	entries, err := l.files.Entries()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if j, ok := strings.CutSuffix(n, ".lock.pending"); ok && strings.HasPrefix(j, ".") {
			n = j[1:]
		} else if f, ok := strings.CutSuffix(n, ".lock"); ok && !strings.HasPrefix(n, ".") {
			n = f
		} else {
			continue
		}
		if events.ValidateLockName(n) == nil {
			names[n] = true
		}
	}
	return names, nil
}

func (l *Ledger) checkFiles(ctx context.Context, rows []*row, rep *replay.Report) error {
	byName := map[string]*row{}
	names, err := l.lockNamesOnDisk()
	if err != nil {
		// The locks the table holds are still checked (and found unreadable).
		rep.Add(replay.Problem{Kind: replay.KindLockFileUnreadable, Detail: fmt.Sprintf(
			"the lock files cannot be listed: %v", err)})
		names = map[string]bool{}
	}
	remote := map[string]bool{}
	for _, r := range rows {
		if !l.ownsFiles(r) {
			remote[r.name] = true // its host checks its files
			continue
		}
		byName[r.name] = r
		if r.held {
			names[r.name] = true
		}
	}
	for _, r := range rows {
		if remote[r.name] {
			continue
		}
		if err := l.checkTargets(ctx, r, rep); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(names) {
		if remote[name] {
			continue
		}
		rep.LockFiles++
		if p := l.unreadable(name, byName[name]); p != nil {
			rep.Add(*p) // no point watching it settle: no write makes a path unreadable
			continue
		}
		p, note, err := l.checkFile(name, byName[name])
		if err != nil {
			return err
		}
		if p != nil && p.Kind != replay.KindForeign {
			// The ledger may have moved on since the snapshot: judge again
			// against the latest committed row, for as long as it keeps moving.
			p, note, err = settle(ctx, l, name, func(fresh *row) (*replay.Problem, string, error) {
				return l.checkFile(name, fresh)
			})
			if err != nil {
				return err
			}
		}
		if note != "" {
			rep.Notes = append(rep.Notes, note)
			continue
		}
		if p != nil {
			rep.Add(*p)
		}
	}
	return nil
}

// unreadable is the problem of a lock whose file or journal the ledger
// cannot read as a regular file, nil when both can be read (or are absent).
func (l *Ledger) unreadable(name string, r *row) *replay.Problem {
	var err error
	if _, err = l.files.Read(name); err == nil {
		_, err = l.files.ReadJournal(name)
	}
	if err == nil {
		return nil
	}
	p := &replay.Problem{Kind: replay.KindLockFileUnreadable, Lock: name, Detail: err.Error()}
	if r != nil {
		p.Seq = r.updatedSeq
		if r.held {
			p.Detail = fmt.Sprintf("the ledger holds the lock (request %s) but its file cannot be read: %v", r.requestID, err)
		}
	}
	return p
}

// checkFile judges one lock file against its table row.
func (l *Ledger) checkFile(name string, r *row) (*replay.Problem, string, error) {
	journal, err := l.files.ReadJournal(name)
	if err != nil {
		return &replay.Problem{Kind: replay.KindLockFileUnreadable, Lock: name, Detail: err.Error()}, "", nil
	}
	if journal.Exists {
		return nil, fmt.Sprintf("lock %s: a write is in flight or was interrupted (%s exists); the next write to the lock, or project, settles it",
			name, l.files.JournalPath(name)), nil
	}
	f, err := l.files.Read(name)
	if err != nil {
		return &replay.Problem{Kind: replay.KindLockFileUnreadable, Lock: name, Detail: err.Error()}, "", nil
	}
	held := r != nil && r.held
	ours := func() bool {
		if r == nil {
			return false
		}
		if bytes.Equal(f.Data, r.file) {
			return true
		}
		rec, err := ParseLockFile(f.Data)
		return err == nil && rec.RequestID == r.requestID
	}
	switch {
	case held && !f.Exists:
		return &replay.Problem{Seq: r.updatedSeq, Kind: replay.KindLockFileMissing, Lock: name, Detail: fmt.Sprintf(
			"the ledger holds the lock (request %s) but %s is missing", r.requestID, l.files.Path(name))}, "", nil
	case held && bytes.Equal(f.Data, r.file):
		return nil, "", nil
	case held && ours():
		return &replay.Problem{Seq: r.updatedSeq, Kind: replay.KindLockFileDifferent, Lock: name, Detail: fmt.Sprintf(
			"%s is request %s's but not the bytes the ledger wrote", l.files.Path(name), r.requestID)}, "", nil
	case held:
		return &replay.Problem{Seq: r.updatedSeq, Kind: replay.KindForeignAtHeld, Lock: name, Detail: fmt.Sprintf(
			"the ledger holds the lock (request %s) but %s is %s", r.requestID, l.files.Path(name), foreignSummary(f.Data))}, "", nil
	case !f.Exists:
		return nil, "", nil
	case ours():
		return &replay.Problem{Seq: r.updatedSeq, Kind: replay.KindLockFileExtra, Lock: name, Detail: fmt.Sprintf(
			"%s is request %s's, but the ledger released the lock", l.files.Path(name), r.requestID)}, "", nil
	}
	return &replay.Problem{Kind: replay.KindForeign, Lock: name, Detail: fmt.Sprintf(
		"%s is %s; left alone", l.files.Path(name), foreignSummary(f.Data))}, "", nil
}

func foreignSummary(data []byte) string {
	rec, err := ParseLockFile(data)
	if err != nil {
		return "an unreadable lock file the ledger did not write"
	}
	return fmt.Sprintf("a lock file the ledger did not write (request %s, actor %s, pid %d on %s)",
		rec.RequestID, rec.Actor, rec.PID, rec.HostID)
}

// checkTargets judges the extra lock files (other tools' formats) that a
// row's holder projects: each must hold exactly the bytes the holder
// renders there while the lock is held; a file still holding the last
// holder's bytes after the release is extra. Anything else at the path of a
// free lock is another tool's business.
func (l *Ledger) checkTargets(ctx context.Context, r *row, rep *replay.Report) error {
	h := holdingFromRow(r)
	for _, t := range h.targets {
		rep.LockFiles++
		p, note, err := l.checkTarget(t, h, r)
		if err != nil {
			return err
		}
		if p != nil && p.Kind != replay.KindForeign {
			p, note, err = settle(ctx, l, r.name, func(fresh *row) (*replay.Problem, string, error) {
				if fresh == nil {
					return nil, "", nil
				}
				fh := holdingFromRow(fresh)
				ft, ok := owns(fh, t.Path)
				if !ok {
					return nil, "", nil // the lock's holder no longer projects this path
				}
				return l.checkTarget(ft, fh, fresh)
			})
			if err != nil {
				return err
			}
		}
		if note != "" {
			rep.Notes = append(rep.Notes, note)
		} else if p != nil {
			rep.Add(*p)
		}
	}
	return nil
}

func (l *Ledger) checkTarget(t events.Target, h *holding, r *row) (*replay.Problem, string, error) {
	journal, err := lockfile.ReadFile(lockfile.JournalOf(t.Path))
	if err != nil {
		return &replay.Problem{Kind: replay.KindLockFileUnreadable, Lock: r.name, Detail: err.Error()}, "", nil
	}
	if journal.Exists {
		return nil, fmt.Sprintf("lock %s: a write is in flight or was interrupted (%s exists); the next write to the lock, or project, settles it",
			r.name, lockfile.JournalOf(t.Path)), nil
	}
	want, err := renderTarget(t, h)
	if err != nil {
		return nil, "", err
	}
	f, err := lockfile.ReadFile(t.Path)
	if err != nil {
		return &replay.Problem{Kind: replay.KindLockFileUnreadable, Lock: r.name, Detail: err.Error()}, "", nil
	}
	switch {
	case r.held && !f.Exists:
		return &replay.Problem{Seq: r.updatedSeq, Kind: replay.KindLockFileMissing, Lock: r.name, Detail: fmt.Sprintf(
			"the ledger holds the lock (request %s) but its %s file %s is missing", r.requestID, t.Format, t.Path)}, "", nil
	case r.held && !bytes.Equal(f.Data, want):
		return &replay.Problem{Seq: r.updatedSeq, Kind: replay.KindLockFileDifferent, Lock: r.name, Detail: fmt.Sprintf(
			"%s (%s) is not what request %s projects there (an old version, or another tool's file)", t.Path, t.Format, r.requestID)}, "", nil
	case !r.held && f.Exists && bytes.Equal(f.Data, want):
		return &replay.Problem{Seq: r.updatedSeq, Kind: replay.KindLockFileExtra, Lock: r.name, Detail: fmt.Sprintf(
			"%s (%s) is request %s's, but the ledger released the lock", t.Path, t.Format, r.requestID)}, "", nil
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
func settle(ctx context.Context, l *Ledger, name string, judge func(*row) (*replay.Problem, string, error)) (*replay.Problem, string, error) {
	deadline := time.Now().Add(settleWithin)
	backoff := time.Millisecond
	for {
		before, err := loadRow(ctx, l.store.DB(), name)
		if err != nil {
			return nil, "", err
		}
		p, note, err := judge(before)
		if err != nil || p == nil {
			return p, note, err
		}
		after, err := loadRow(ctx, l.store.DB(), name)
		if err != nil {
			return nil, "", err
		}
		if !sameVersion(before, after) {
			if time.Now().After(deadline) {
				return nil, fmt.Sprintf("lock %s: changed on every look while verify read it; re-run verify to check its files", name), nil
			}
			continue // a write committed between the reads: judge the new state
		}
		if time.Now().After(deadline) {
			return p, "", nil
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			return nil, "", err
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

func sameVersion(a, b *row) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.updatedSeq == b.updatedSeq && a.held == b.held
}
