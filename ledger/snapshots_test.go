package ledger_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// The snapshot tests store a snapshot every snapEvery events
// (ledger.SetSnapshotEvery), so that their fixture is short: snapEvents
// events over 7 locks, one every snapStep from snapBase (long enough
// apart for stale holders to be stolen from within it), two snapshots
// due (at snapEvery and 2*snapEvery).
var snapBase = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

const (
	snapEvery  = 200
	snapEvents = snapEvery * 5 / 2
	snapStep   = 10 * time.Second
)

// snapAt is the time of event seq of the fixture.
func snapAt(seq int64) time.Time { return snapBase.Add(time.Duration(seq) * snapStep) }

// snapSeqs is how snapshotSeqs prints snapshots at n*snapEvery for each n.
func snapSeqs(n ...int64) string {
	var seqs []int64
	for _, i := range n {
		seqs = append(seqs, i*snapEvery)
	}
	return fmt.Sprint(seqs)
}

// snapshotLedger writes the fixture and opens it on the store the test
// runs on (PostgreSQL: imported from the SQLite fixture), with the
// database's own handle for looking and tampering.
func snapshotLedger(t *testing.T, kind string) (*ledger.Ledger, *sql.DB) {
	l, db, _ := snapshotLedgerAt(t, kind)
	return l, db
}

// snapshotLedgerAt is snapshotLedger, and the PostgreSQL database's URL.
func snapshotLedgerAt(t *testing.T, kind string) (*ledger.Ledger, *sql.DB, string) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	if _, _, err := (fixture.Ledger{Events: snapEvents, Locks: 7, Start: snapBase, Span: snapEvents * snapStep}).Write(root); err != nil {
		t.Fatal(err)
	}
	src := fixture.Open(t, root, ledger.MustExist())
	if _, err := src.Project(ctx); err != nil {
		t.Fatal(err)
	}
	if kind == "sqlite" {
		return src, pgtest.Open(t, src.Source()), ""
	}
	where := pgtest.NewDatabase(t)
	dst := fixture.OpenPostgres(t, where)
	if _, err := dst.Import(ctx, src); err != nil {
		t.Fatal(err)
	}
	// The lock files of the holders, in this root.
	if _, err := dst.Project(ctx); err != nil {
		t.Fatal(err)
	}
	return dst, pgtest.Open(t, dst.Source()), where
}

// snapshotQuery is one read whose result must not depend on snapshots.
type snapshotQuery struct {
	at   time.Time // zero: all events
	lock string    // "": every lock
}

func (q snapshotQuery) String() string {
	return fmt.Sprintf("%s/%q", q.at.Format(time.RFC3339Nano), q.lock)
}

var snapshotQueries = []snapshotQuery{
	{at: snapAt(snapEvery - 1)},                    // before the first snapshot's events end
	{at: snapAt(snapEvery)},                        // exactly after the first snapshot's event
	{at: snapAt(snapEvery + 73)},                   // between the two
	{at: snapAt(snapEvery + 73).Add(1)},            // off the second
	{at: snapAt(snapEvery + 77).Add(snapStep / 2)}, // between two events
	{at: snapAt(2 * snapEvery)},                    // the second snapshot's state alone
	{at: snapAt(snapEvery * 12 / 5), lock: fixture.LockName(3)},
	{},
	{lock: fixture.LockName(0)},
	{lock: "never-held"},
}

// lockView is what the commands show of a lock, as JSON: its holders,
// queue and last event, judged at t.
func lockView(t *testing.T, l *replay.Lock, at time.Time) string {
	t.Helper()
	if l == nil {
		return "null"
	}
	shared := l.Shared
	if len(shared) == 0 {
		shared = nil
	}
	b, err := json.Marshal(struct {
		Name       string
		Held       bool
		Holder     *replay.Holder
		UpdatedSeq int64
		Last       replay.EventRef
		Shared     []*replay.Holder
		Limit      int64
		Queue      []replay.Queued
		State      string
	}{l.Name, l.Held, l.Holder, l.UpdatedSeq, l.Last, shared, l.Limit, l.QueueAt(at), l.StateAt(at)})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// asOfViews runs every query and renders what it found.
func asOfViews(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, q := range snapshotQueries {
		st, err := replay.AsOf(context.Background(), db, q.at, q.lock)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		at := q.at
		if at.IsZero() {
			at = snapAt(snapEvents)
		}
		var b strings.Builder
		for _, l := range st.Locks() {
			b.WriteString(lockView(t, l, at) + "\n")
		}
		if q.lock == "" {
			fmt.Fprintf(&b, "seq %d events %d anomalies %d", st.Seq, st.Events, st.AnomalyCount)
		}
		out[q.String()] = b.String()
	}
	// The timeline's holdings of a window: those begun before it come
	// from the fold up to its start.
	for _, f := range []replay.Filter{
		{Since: snapAt(snapEvery * 41 / 20), Until: snapAt(snapEvery * 241 / 100)},
		{Since: snapAt(2*snapEvery + 1), Until: snapAt(2*snapEvery + 2)},
		{Lock: fixture.LockName(2), Since: snapAt(snapEvery * 6 / 5), Until: snapAt(snapEvery * 39 / 25)},
	} {
		hs, err := replay.Holdings(context.Background(), db, f)
		if err != nil {
			t.Fatalf("holdings %+v: %v", f, err)
		}
		var b strings.Builder
		for _, h := range hs {
			ended := int64(0)
			if h.Ended != nil {
				ended = h.Ended.Seq
			}
			fmt.Fprintf(&b, "%s %d-%d shared=%v %s\n", h.Lock, h.Opened.Seq, ended, h.Shared, h.Opened.JSON())
		}
		out[fmt.Sprintf("holdings %s %s-%s", f.Lock, f.Since.Format(time.TimeOnly), f.Until.Format(time.TimeOnly))] = b.String()
	}
	return out
}

func sameViews(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s, %s:\n got %s\nwant %s", what, k, got[k], w)
		}
	}
}

func snapshotSeqs(t *testing.T, db *sql.DB) []int64 {
	t.Helper()
	out, err := store.QueryAll(context.Background(), db, store.ScanOne[int64], `SELECT seq FROM snapshots ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Snapshots are made, verify accepts them, and every read of a past
// instant, of one lock or all, finds what the fold of the whole log finds.
// The fold without snapshots is the one a ledger from before them gets.
func TestSnapshotsFoldLikeTheWholeLog(t *testing.T) {
	ledger.SetSnapshotEvery(t, snapEvery)
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l, db := snapshotLedger(t, f.kind)
		if got := snapshotSeqs(t, db); len(got) != 0 {
			t.Fatalf("snapshots before any were written: %v", got)
		}
		want := asOfViews(t, db)
		if err := l.WriteSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(snapshotSeqs(t, db)), snapSeqs(1, 2); got != want {
			t.Fatalf("snapshots at %s, want %s", got, want)
		}
		// Written again: nothing new, nothing refused.
		if err := l.WriteSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		verifyOK(t, l)
		sameViews(t, "with snapshots", asOfViews(t, db), want)
	})
}

// A write that ends past a multiple of the spacing stores the snapshot
// there, after its commit; one whose role may not store it (a PostgreSQL
// writer granted what it had before snapshots) still stands.
func TestWritesMakeSnapshots(t *testing.T) {
	ledger.SetSnapshotEvery(t, snapEvery)
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		root := t.TempDir()
		n := snapEvery - 20
		if _, _, err := (fixture.Ledger{Events: n, Locks: 3, Start: snapBase, Span: time.Duration(n) * snapStep}).Write(root); err != nil {
			t.Fatal(err)
		}
		l := fixture.Open(t, root, ledger.MustExist())
		if _, err := l.Project(ctx); err != nil {
			t.Fatal(err)
		}
		if f.kind == "postgres" {
			dst := fixture.OpenPostgres(t, pgtest.NewDatabase(t))
			if _, err := dst.Import(ctx, l); err != nil {
				t.Fatal(err)
			}
			if _, err := dst.Project(ctx); err != nil {
				t.Fatal(err)
			}
			l = dst
		}
		db := pgtest.Open(t, l.Source())
		var head int
		if err := db.QueryRow(`SELECT max(seq) FROM events`).Scan(&head); err != nil {
			t.Fatal(err)
		}
		cycles(t, l, (snapEvery-1-head)/2) // up to the seq before the first snapshot's, or the one before that
		if got := snapshotSeqs(t, db); len(got) != 0 {
			t.Fatalf("snapshots at %v before seq %d", got, snapEvery)
		}
		cycles(t, l, 2)
		if got, want := fmt.Sprint(snapshotSeqs(t, db)), snapSeqs(1); got != want {
			t.Fatalf("snapshots at %s after seq %d, want %s", got, snapEvery, want)
		}
		verifyOK(t, l)
	})
}

// tamper replaces the snapshot at seq with what edit makes of its row
// (DELETE and INSERT: the table refuses UPDATE).
func tamper(t *testing.T, db *sql.DB, seq int64, edit func(eventHash, stateHash *string, state *[]byte)) {
	t.Helper()
	tamperRow(t, db, seq, func(s *store.Snapshot) { edit(&s.EventHash, &s.StateHash, &s.State) })
}

// tamperRow replaces the snapshot at seq with what edit makes of it.
func tamperRow(t *testing.T, db *sql.DB, seq int64, edit func(*store.Snapshot)) {
	t.Helper()
	s := store.Snapshot{Seq: seq}
	var minAt sql.NullString
	if err := db.QueryRow(`SELECT event_hash, from_seq, max_at, version, state_hash, state, min_at FROM snapshots WHERE seq = $1`, seq).Scan(
		&s.EventHash, &s.FromSeq, &s.MaxAt, &s.Version, &s.StateHash, &s.State, &minAt); err != nil {
		t.Fatal(err)
	}
	s.MinAt = minAt.String
	edit(&s)
	if _, err := db.Exec(`DELETE FROM snapshots WHERE seq = $1`, seq); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertSnapshot(context.Background(), db, &s); err != nil {
		t.Fatal(err)
	}
}

// forgedState is the state of a snapshot with one holder's actor
// rewritten: what an attacker would want who --at to show.
func forgedState(t *testing.T, state []byte) []byte {
	t.Helper()
	forged := strings.Replace(string(state), `"actor":"`, `"actor":"mallory-`, 1)
	if forged == string(state) {
		t.Fatal("the snapshot names no actor to forge")
	}
	return []byte(forged)
}

// A snapshot whose row was changed is not read (the event it follows, or
// the hash of its state, no longer match), and verify names every changed
// snapshot, one whose hashes were recomputed too.
func TestTamperedSnapshots(t *testing.T) {
	ledger.SetSnapshotEvery(t, snapEvery)
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l, db := snapshotLedger(t, f.kind)
		want := asOfViews(t, db)
		if err := l.WriteSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		// The state rewritten, its hash left: readers fold without it.
		tamper(t, db, 2*snapEvery, func(_, _ *string, state *[]byte) { *state = forgedState(t, *state) })
		// The event it follows named wrongly, its state a forgery whose
		// hash was recomputed: readers fold without it too.
		tamper(t, db, snapEvery, func(eventHash, stateHash *string, state *[]byte) {
			*state = forgedState(t, *state)
			*stateHash = replay.StateHash(*state)
			*eventHash = strings.Repeat("0", len(*eventHash))
		})
		sameViews(t, "with tampered snapshots", asOfViews(t, db), want)
		verifyFindsSnapshotsAt(t, l, "", snapEvery, 2*snapEvery)
	})
}

// A snapshot whose state was rewritten with its hash recomputed is not
// the fold of the events before it: verify says so, naming its seq.
func TestForgedSnapshotFailsVerify(t *testing.T) {
	ledger.SetSnapshotEvery(t, snapEvery)
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l, db := snapshotLedger(t, f.kind)
		if err := l.WriteSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		tamper(t, db, 2*snapEvery, func(_, stateHash *string, state *[]byte) {
			*state = forgedState(t, *state)
			*stateHash = replay.StateHash(*state)
		})
		rep, err := l.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK || len(rep.Problems) != 1 || rep.Problems[0].Kind != verify.KindSnapshot || rep.Problems[0].Seq != 2*snapEvery ||
			!strings.Contains(rep.Problems[0].Detail, fmt.Sprintf("is not the fold of events 1 to %d", 2*snapEvery)) {
			t.Errorf("verify: got %+v, want one snapshot problem at %d", rep.Problems, 2*snapEvery)
		}
	})
}

// A reader that may not write uses the snapshots others stored, and
// stores none: a read-only open on SQLite, a role that may only read on
// PostgreSQL.
func TestReadOnlyUsersReadSnapshots(t *testing.T) {
	ledger.SetSnapshotEvery(t, snapEvery)
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l, db, where := snapshotLedgerAt(t, f.kind)
		want := asOfViews(t, db)
		if err := l.WriteSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		var reader *ledger.Ledger
		var readerDB *sql.DB
		if f.kind == "sqlite" {
			reader = fixture.Open(t, l.Root(), ledger.ReadOnly())
			readerDB = pgtest.Open(t, l.Source())
		} else {
			role := "snapshot_reader"
			for _, q := range []string{"CREATE ROLE " + role + " LOGIN", "GRANT USAGE ON SCHEMA public TO " + role,
				"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + role} {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			t.Cleanup(func() {
				db.Exec("DROP OWNED BY " + role)
				db.Exec("DROP ROLE " + role)
			})
			u, err := url.Parse(where)
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.User(role)
			reader = fixture.Open(t, t.TempDir(), ledger.WithDatabase(u.String()), ledger.ReadOnly())
			readerDB = pgtest.Open(t, u.String())
			if _, err := readerDB.Exec(`INSERT INTO snapshots (seq, event_hash, from_seq, max_at, version, state_hash, state)
				SELECT $1, event_hash, from_seq, max_at, version, state_hash, state FROM snapshots WHERE seq = $2`, 3*snapEvery, 2*snapEvery); err == nil {
				t.Fatal("the reading role stored a snapshot")
			}
		}
		if err := reader.WriteSnapshots(ctx); !errors.Is(err, ledger.ErrReadOnly) {
			t.Errorf("WriteSnapshots on a read-only ledger: got %v, want ErrReadOnly", err)
		}
		sameViews(t, "read-only", asOfViews(t, readerDB), want)
	})
}

// The times a snapshot records of its events bound where readers look for
// the events at or before an instant: verify recomputes them, and names a
// snapshot whose latest time, or its block's earliest, is not its events'.
func TestSnapshotTimesCheckedByVerify(t *testing.T) {
	ledger.SetSnapshotEvery(t, snapEvery)
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l, db := snapshotLedger(t, f.kind)
		if err := l.WriteSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		verifyOK(t, l)
		tamperRow(t, db, snapEvery, func(s *store.Snapshot) { s.MinAt = events.FormatTime(snapAt(snapEvery * 9 / 10)) })
		tamperRow(t, db, 2*snapEvery, func(s *store.Snapshot) { s.MaxAt = events.FormatTime(snapAt(2*snapEvery - snapEvery/10)) })
		verifyFindsSnapshotsAt(t, l, "records its events' times", snapEvery, 2*snapEvery)
	})
}

// A clock stepped back an hour after the snapshots were made: the events
// it dated come late in the log but are "as of" the instants after their
// time, so reads of those instants fold them though every snapshot's
// events end later, and find what the fold of the whole log finds.
func TestClockSteppedBackPastSnapshots(t *testing.T) {
	ledger.SetSnapshotEvery(t, snapEvery)
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		if f.kind != "sqlite" {
			t.Skip("PostgreSQL dates events by its own clock, which a test cannot step back")
		}
		ctx := context.Background()
		l, db := snapshotLedger(t, f.kind)
		if err := l.WriteSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		back := snapAt(snapEvery * 3 / 2)
		cycles(t, fixture.Open(t, l.Root(), ledger.MustExist(), ledger.WithClock(func() time.Time { return back })), 2)
		var head int64
		if err := db.QueryRow(`SELECT max(seq) FROM events`).Scan(&head); err != nil {
			t.Fatal(err)
		}
		queries := []replay.Filter{{Until: back}, {Until: back.Add(time.Second), Lock: "c"}, {Until: back.Add(-time.Second)}}
		read := func() string {
			var b strings.Builder
			for _, q := range queries {
				st, err := replay.AsOf(ctx, db, q.Until, q.Lock)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Fprintf(&b, "%s: seq %d", q.Until.Format(time.TimeOnly), st.Seq); q.Lock == "" {
					// A fold of one lock counts the events of the snapshot it started from.
					fmt.Fprintf(&b, " events %d", st.Events)
				}
				b.WriteString("\n")
				for _, lk := range st.Locks() {
					b.WriteString(lockView(t, lk, q.Until) + "\n")
				}
			}
			hs, err := replay.Holdings(ctx, db, replay.Filter{Lock: "c", Since: back.Add(-time.Minute), Until: back.Add(time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%d holdings of c\n", len(hs))
			return b.String()
		}
		got := read()
		if !strings.Contains(got, fmt.Sprintf("seq %d\n", head)) || !strings.Contains(got, "2 holdings of c") {
			t.Errorf("the events dated back (up to seq %d) are not read as of their time:\n%s", head, got)
		}
		if _, err := db.Exec(`DELETE FROM snapshots`); err != nil {
			t.Fatal(err)
		}
		if want := read(); got != want {
			t.Errorf("with snapshots:\n%s\nwithout:\n%s", got, want)
		}
	})
}

// verifyFindsSnapshotsAt runs verify on l and wants it failed, with
// snapshot problems (those whose detail contains detail) at exactly seqs.
func verifyFindsSnapshotsAt(t *testing.T, l *ledger.Ledger, detail string, seqs ...int64) {
	t.Helper()
	rep, err := l.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		if p.Kind == verify.KindSnapshot && strings.Contains(p.Detail, detail) {
			got = append(got, fmt.Sprint(p.Seq))
		}
	}
	if want := strings.Trim(fmt.Sprint(seqs), "[]"); rep.OK || strings.Join(got, " ") != want {
		t.Errorf("verify: got snapshot problems %q at %v (ok %v), want at %s: %+v", detail, got, rep.OK, want, rep.Problems)
	}
}

// A verify from a kept head compares the snapshots stored after it with
// its fold, as a check of the whole log does, and checks the whole log
// when those up to the head are not the ones that head's verify found
// (stored since, or rewritten: the rewrite is then named).
func TestVerifyFromChecksTheSnapshots(t *testing.T) {
	ledger.SetSnapshotEvery(t, snapEvery)
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		l, db := snapshotLedger(t, f.kind)
		if err := l.WriteSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		_, before := verifyKeeping(t, l, nil)
		if before.Seq == 0 || before.Seq >= 3*snapEvery {
			t.Fatalf("kept head at seq %d, want one before %d", before.Seq, 3*snapEvery)
		}
		cycles(t, l, int(3*snapEvery-before.Seq)/2+1)
		rep, after := verifyKeeping(t, l, before)
		if got, want := fmt.Sprint(snapshotSeqs(t, db)), snapSeqs(1, 2, 3); !rep.OK || rep.From == nil || got != want {
			t.Fatalf("verify from seq %d: OK %v, from %v, snapshots at %s (want %s); problems %+v", before.Seq, rep.OK, rep.From, got, want, rep.Problems)
		}
		_, whole := verifyKeeping(t, l, nil)
		sameHead(t, "past a snapshot", after, whole)

		var stored store.Snapshot
		tamperRow(t, db, 3*snapEvery, func(s *store.Snapshot) { stored = *s })
		restore := func() { tamperRow(t, db, 3*snapEvery, func(s *store.Snapshot) { *s = stored }) }
		for _, c := range []struct {
			name, detail string
			edit         func(*store.Snapshot)
			// unread: readers do not take it (its state does not hash to
			// what it recorded), and a verify from a later head does not
			// read it either; a check of the whole log names it.
			unread bool
		}{
			{"its times", "records its events' times", func(s *store.Snapshot) { s.MaxAt = events.FormatTime(snapAt(2 * snapEvery)) }, false},
			{"its block's earliest time", "records its events' times", func(s *store.Snapshot) { s.MinAt = events.FormatTime(snapAt(2 * snapEvery)) }, false},
			{"its state, hash recomputed", "is not the fold of events 1 to", func(s *store.Snapshot) {
				s.State = forgedState(t, s.State)
				s.StateHash = replay.StateHash(s.State)
			}, false},
			{"the event it follows", "follows an event whose hash was", func(s *store.Snapshot) { s.EventHash = strings.Repeat("0", len(s.EventHash)) }, false},
			{"its state", "but its state hashes to", func(s *store.Snapshot) { s.State = forgedState(t, s.State) }, true},
		} {
			tamperRow(t, db, 3*snapEvery, c.edit)
			// From the head before it: the snapshot is among the new.
			rep, _ := verifyKeeping(t, l, before)
			if rep.From == nil || !snapshotProblemAt(rep, 3*snapEvery, c.detail) {
				t.Errorf("%s rewritten, verify from seq %d: from %v, problems %+v", c.name, before.Seq, rep.From, rep.Problems)
			}
			// From the head after it: the whole log is checked.
			rep, _ = verifyKeeping(t, l, after)
			switch {
			case c.unread:
				if !rep.OK || rep.From == nil {
					t.Errorf("%s rewritten, verify from seq %d: OK %v, from %v, problems %+v", c.name, after.Seq, rep.OK, rep.From, rep.Problems)
				}
				if rep, _ = verifyKeeping(t, l, nil); !snapshotProblemAt(rep, 3*snapEvery, c.detail) {
					t.Errorf("%s rewritten, verify of the whole log: problems %+v", c.name, rep.Problems)
				}
			case rep.From != nil || !snapshotProblemAt(rep, 3*snapEvery, c.detail) || !slices.ContainsFunc(rep.Notes, func(n string) bool {
				return strings.Contains(n, fmt.Sprintf("the snapshots up to seq %d are not those", after.Seq))
			}):
				t.Errorf("%s rewritten, verify from seq %d: from %v, notes %q, problems %+v", c.name, after.Seq, rep.From, rep.Notes, rep.Problems)
			}
			restore()
		}

		// A snapshot stored since (as a write or checkpoint stores those a
		// ledger lacks) is checked with the whole log, which finds it fine.
		if _, err := db.Exec(`DELETE FROM snapshots WHERE seq = $1`, 3*snapEvery); err != nil {
			t.Fatal(err)
		}
		rep, gone := verifyKeeping(t, l, after)
		if !rep.OK || rep.From != nil {
			t.Errorf("a snapshot gone since: OK %v, from %v; problems %+v", rep.OK, rep.From, rep.Problems)
		}
		if err := l.WriteSnapshots(ctx); err != nil {
			t.Fatal(err)
		}
		if rep, _ = verifyKeeping(t, l, gone); !rep.OK || rep.From != nil || len(rep.Notes) == 0 {
			t.Errorf("a snapshot stored since: OK %v, from %v, notes %q; problems %+v", rep.OK, rep.From, rep.Notes, rep.Problems)
		}
	})
}

// snapshotProblemAt: rep names the snapshot at seq, with detail.
func snapshotProblemAt(rep *verify.Report, seq int64, detail string) bool {
	return !rep.OK && slices.ContainsFunc(rep.Problems, func(p verify.Problem) bool {
		return p.Kind == verify.KindSnapshot && p.Seq == seq && strings.Contains(p.Detail, detail)
	})
}

// A clock that steps back now and then, around snapshot boundaries and
// inside blocks, and one write whose events all come before a block's
// earliest: every read of an instant or a window (the fold as of it, of
// one lock, the holdings of a window, the events of a window) finds what
// it finds without snapshots, at every event's time and beside it.
func TestClockStepsAroundSnapshotsFoldLikeTheWholeLog(t *testing.T) {
	const every = 20
	ledger.SetSnapshotEvery(t, every)
	ctx := context.Background()
	now := snapBase.Add(4 * time.Hour)
	l := fixture.Open(t, t.TempDir(), ledger.Unsigned(), ledger.WithClock(func() time.Time { return now }))
	now = now.Add(time.Hour)
	db := pgtest.Open(t, l.Source())
	steps := map[int]time.Duration{9: -20 * time.Minute, 10: -time.Minute, 19: -2 * time.Hour, 20: 3 * time.Hour, 31: -3 * time.Hour, 45: -30 * time.Second, 46: -30 * time.Second}
	held := map[string]string{}
	release := func(lock string) {
		if rid, ok := held[lock]; ok {
			now = now.Add(3 * time.Second)
			if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: lock, Identity: as(rid)}); err != nil {
				t.Fatal(err)
			}
			delete(held, lock)
		}
	}
	for i := range 60 {
		now = now.Add(7*time.Second + steps[i])
		lock, rid := fmt.Sprintf("k%d", i%3), fmt.Sprintf("r%d", i)
		if i%5 != 2 {
			release(lock) // else a refused acquire: no event
		}
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, Identity: as(rid), TTL: 24 * time.Hour}); err == nil {
			held[lock] = rid
		} else if !errors.Is(err, ledger.ErrHeld) {
			t.Fatal(err)
		}
		if i%4 != 3 {
			release(lock)
		}
	}
	if err := l.WriteSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if got := snapshotSeqs(t, db); len(got) < 4 {
		t.Fatalf("snapshots at %v, want at least 4", got)
	}
	// The snapshots are the folds verify makes, their times included.
	if rep, err := l.Verify(ctx, ledger.AllowClockSkew(4*time.Hour)); err != nil || !rep.OK {
		t.Fatalf("verify: %v; problems %+v", err, rep.Problems)
	}
	ats, err := store.QueryAll(ctx, db, store.ScanOne[string], `SELECT DISTINCT at FROM events ORDER BY at`)
	if err != nil {
		t.Fatal(err)
	}
	var instants []time.Time
	for _, s := range ats {
		at, err := events.ParseTime(s)
		if err != nil {
			t.Fatal(err)
		}
		instants = append(instants, at.Add(-time.Nanosecond), at, at.Add(time.Nanosecond))
	}
	read := func() map[string]string {
		out := map[string]string{}
		for i, at := range instants {
			for _, lock := range []string{"", "k1"} {
				st, err := replay.AsOf(ctx, db, at, lock)
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				if lock == "" {
					// A fold of one lock counts the events of the snapshot it started from.
					fmt.Fprintf(&b, "seq %d events %d\n", st.Seq, st.Events)
				}
				for _, lk := range st.Locks() {
					b.WriteString(lockView(t, lk, at) + "\n")
				}
				out[fmt.Sprintf("as of %s %q", at.Format(time.RFC3339Nano), lock)] = b.String()
			}
			if i%3 != 1 || i+40 >= len(instants) {
				continue
			}
			f := replay.Filter{Since: at, Until: instants[i+40]}
			hs, err := replay.Holdings(ctx, db, f)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, h := range hs {
				fmt.Fprintf(&b, "%s %d %v; ", h.Lock, h.Opened.Seq, h.Ended != nil)
			}
			b.WriteString("\nevents")
			if err := replay.Scan(ctx, db, f, func(ev *replay.Event) error {
				fmt.Fprintf(&b, " %d", ev.Seq)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("window %s", at.Format(time.RFC3339Nano))] = b.String()
		}
		return out
	}
	got := read()
	if _, err := db.Exec(`DELETE FROM snapshots`); err != nil {
		t.Fatal(err)
	}
	want := read()
	sameViews(t, "with snapshots", got, want)
}

// A log cut back (restored from an older copy, its snapshots kept) leaves
// snapshots of events it no longer holds: past its end, then, once the log
// is written past them again, following events that are not the log's.
// Such a row blocks the log's own snapshot at its seq (a writer stores
// none where one is stored) and verify fails on it for ever; project, the
// cut accepted, removes them, and writes then store the log's own.
func TestProjectRemovesSnapshotsOfEventsTheLogNoLongerHolds(t *testing.T) {
	ledger.SetSnapshotEvery(t, snapEvery)
	ctx := context.Background()
	l, db, where := snapshotLedgerAt(t, "postgres")
	if err := l.WriteSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(snapshotSeqs(t, db)); got != snapSeqs(1, 2) {
		t.Fatalf("snapshots %s before the cut, want %s", got, snapSeqs(1, 2))
	}
	l.Close()
	cut := int64(snapEvery * 3 / 2)
	for _, q := range []string{
		`SET session_replication_role = replica`, // past the append-only triggers, as a restore is
		fmt.Sprintf(`DELETE FROM events WHERE seq > %d`, cut), fmt.Sprintf(`DELETE FROM tlog_hashes WHERE seq > %d`, cut),
		fmt.Sprintf(`DELETE FROM checkpoints WHERE size > %d`, cut),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	l, err := ledger.Open(ctx, t.TempDir(), ledger.WithDatabase(where), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Project(ctx, ledger.AcceptBrokenChain()); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(snapshotSeqs(t, db)); got != snapSeqs(1) {
		t.Errorf("snapshots %s once the cut is accepted, want %s", got, snapSeqs(1))
	}
	verifyOK := func(when string) {
		t.Helper()
		rep, err := l.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK {
			t.Errorf("verify %s: %+v", when, rep.Problems)
		}
	}
	verifyOK("once the cut is accepted")
	// The log written past the second snapshot's seq again.
	for head := cut; head <= 2*snapEvery+2; head += 2 {
		a, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "after-the-cut", Identity: ledger.Identity{Actor: "restore-review"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "after-the-cut", Identity: ledger.Identity{Actor: "restore-review", RequestID: a.RequestID}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.WriteSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(snapshotSeqs(t, db)); got != snapSeqs(1, 2) {
		t.Errorf("snapshots %s once the log passed the second again, want %s", got, snapSeqs(1, 2))
	}
	verifyOK("once the log passed the second snapshot again")
	// A stale row at a seq the log holds (the snapshots restored from a
	// later copy than the log): project removes it too.
	tamper(t, db, 2*snapEvery, func(eventHash, _ *string, _ *[]byte) { *eventHash = strings.Repeat("0", len(*eventHash)) })
	if _, err := l.Project(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	verifyOK("after project and a write of the snapshots")
}
