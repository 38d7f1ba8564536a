package ledger_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// verifyKeeping verifies l (from v when given) and returns the report and
// the head it kept.
func verifyKeeping(t *testing.T, l *ledger.Ledger, from *replay.Verified) (*verify.Report, *replay.Verified) {
	t.Helper()
	var kept replay.Verified
	opts := []ledger.VerifyOption{ledger.KeepVerified(&kept)}
	if from != nil {
		opts = append(opts, ledger.From(from))
	}
	rep, err := l.Verify(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rep, &kept
}

// sameHead fails unless two kept heads are of the same log and fold.
func sameHead(t *testing.T, what string, got, want *replay.Verified) {
	t.Helper()
	g, w := *got, *want
	g.At, w.At, g.Full, w.Full = time.Time{}, time.Time{}, false, false
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s: kept head\n%s\nwant (the full verify's)\n%s", what, gb, wb)
	}
}

// TestVerifyFromAVerifiedHead: a verify from the head an earlier verify
// kept reads only the events after it, finds them intact, and keeps the
// same head (seq, hash, Merkle frontier, clock, fold) as a full verify of
// the whole log; on both stores.
func TestVerifyFromAVerifiedHead(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		l := f.open("host-a")
		cycles(t, l, 5)
		rep, v := verifyKeeping(t, l, nil)
		if !rep.OK || rep.From != nil || v.Seq != rep.LastSeq || v.Seq == 0 || !v.Full || v.LedgerID != l.ID() {
			t.Fatalf("full verify: OK %v, from %v, kept %d (last %d), full %v, ledger %q", rep.OK, rep.From, v.Seq, rep.LastSeq, v.Full, v.LedgerID)
		}
		ctx := context.Background()
		for i := range 3 {
			if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: fmt.Sprintf("held-%d", i), Identity: as(fmt.Sprintf("h%d", i)), TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		inc, next := verifyKeeping(t, l, v)
		if !inc.OK || inc.From == nil || inc.From.Seq != v.Seq || inc.FirstSeq != v.Seq+1 || inc.Events != 3 || inc.Locks != 4 {
			t.Fatalf("incremental verify: OK %v, from %+v, seq %d-%d (%d events), %d locks; problems %+v",
				inc.OK, inc.From, inc.FirstSeq, inc.LastSeq, inc.Events, inc.Locks, inc.Problems)
		}
		if next.Full {
			t.Error("an incremental verify kept a head marked full")
		}
		_, whole := verifyKeeping(t, l, nil)
		sameHead(t, "after 3 events", next, whole)

		// Nothing new: the same head.
		again, same := verifyKeeping(t, l, next)
		if !again.OK || again.Events != 0 || again.LastSeq != next.Seq {
			t.Fatalf("incremental verify of nothing new: OK %v, %d events, last %d; problems %+v", again.OK, again.Events, again.LastSeq, again.Problems)
		}
		sameHead(t, "nothing new", same, whole)

		other := *next
		other.LedgerID = "another-ledger"
		if _, err := l.Verify(ctx, ledger.From(&other)); err == nil {
			t.Error("a head of another ledger was used")
		}
		// A head that cannot be verified from is an error of the caller's,
		// not a report of damage to the ledger.
		for _, edit := range []func(*replay.Verified){
			func(v *replay.Verified) { v.State = []byte(`{"seq":1}`) },
			func(v *replay.Verified) { v.Frontier = []string{"not a hash"} },
			func(v *replay.Verified) { v.MaxAt = "" },
		} {
			bad := *next
			edit(&bad)
			if rep, err := l.Verify(ctx, ledger.From(&bad)); err == nil {
				t.Errorf("a head that cannot be verified from was used: report %+v", rep.Problems)
			}
		}
	})
}

// TestVerifyFromCatchesWhatItPromises: on SQLite, what a verify from a
// kept head finds and what it leaves to a full one. A log that no longer
// holds the head (cut below it, a database restored from an older copy,
// re-chained) is checked whole, and fails even when nothing else shows it
// (nothing signed the log); a new event edited and the locks table edited
// fail as always. An event before the head edited in place is not seen (a
// full verify finds it).
func TestVerifyFromCatchesWhatItPromises(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T) (*ledger.Ledger, *sql.DB, *replay.Verified, string) {
		root := t.TempDir()
		l, err := ledger.Open(ctx, root, ledger.Unsigned())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		cycles(t, l, 4)
		rep, v := verifyKeeping(t, l, nil)
		if !rep.OK || v.Seq != 8 {
			t.Fatalf("full verify: OK %v, kept seq %d; problems %+v", rep.OK, v.Seq, rep.Problems)
		}
		db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return l, db, v, root
	}
	exec := func(t *testing.T, db *sql.DB, qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	fails := func(t *testing.T, rep *verify.Report, kind verify.Kind, seq int64) {
		t.Helper()
		for _, p := range rep.Problems {
			if p.Kind == kind && (seq == 0 || p.Seq == seq) {
				t.Logf("%s", p.Detail)
				return
			}
		}
		t.Errorf("want a %s problem at seq %d; OK %v, problems %+v", kind, seq, rep.OK, rep.Problems)
	}

	t.Run("cut below the head", func(t *testing.T) {
		l, db, v, _ := setup(t)
		exec(t, db, `DROP TRIGGER events_no_delete`, `DROP TRIGGER tlog_hashes_no_delete`,
			`DELETE FROM events WHERE seq > 6`, `DELETE FROM tlog_hashes WHERE seq > 6`)
		// The whole log is checked, which finds the locks table ahead of
		// it; the note names the head it no longer holds.
		rep, kept := verifyKeeping(t, l, v)
		fails(t, rep, verify.KindTruncated, 7)
		if rep.OK || kept.Seq != 0 || rep.From != nil || len(rep.Notes) == 0 || !strings.Contains(rep.Notes[len(rep.Notes)-1], "no longer holds seq 8") {
			t.Errorf("OK %v, kept %d, from %v, notes %q", rep.OK, kept.Seq, rep.From, rep.Notes)
		}
	})
	t.Run("restored from an older copy", func(t *testing.T) {
		l, db, v, root := setup(t)
		old := filepath.Join(t.TempDir(), "old.db")
		exec(t, db, fmt.Sprintf(`VACUUM INTO '%s'`, old))
		cycles(t, l, 2)
		_, newer := verifyKeeping(t, l, v)
		if newer.Seq != 12 {
			t.Fatalf("kept seq %d, want 12", newer.Seq)
		}
		l.Close()
		b, err := os.ReadFile(old)
		if err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			_ = os.Remove(filepath.Join(root, ledger.DBFile+suffix))
		}
		if err := os.WriteFile(filepath.Join(root, ledger.DBFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		restored, err := ledger.Open(ctx, root, ledger.Unsigned(), ledger.ReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		defer restored.Close()
		// The root's pin saw seq 12 too: its problem names the first seq
		// the copy lacks, and explains the head verified before, which
		// the note names.
		rep, _ := verifyKeeping(t, restored, newer)
		fails(t, rep, verify.KindTruncated, 9)
		if len(rep.Notes) == 0 || !strings.Contains(rep.Notes[len(rep.Notes)-1], "seq 12") {
			t.Errorf("the notes do not name the head verified before: %q", rep.Notes)
		}
	})
	t.Run("re-chained", func(t *testing.T) {
		l, db, v, _ := setup(t)
		// The first event rewritten and every hash after it recomputed:
		// a consistent chain, but not the one verified.
		exec(t, db, `DROP TRIGGER events_no_delete`, `DROP TRIGGER tlog_hashes_no_delete`)
		fixture.Rechain(t, db, func(bs []fixture.Body) []fixture.Body {
			bs[0]["actor"] = "mallory"
			return bs
		})
		rep, _ := verifyKeeping(t, l, v)
		fails(t, rep, verify.KindModified, 8)
	})
	t.Run("a new event edited", func(t *testing.T) {
		l, db, v, _ := setup(t)
		cycles(t, l, 1)
		exec(t, db, `DROP TRIGGER events_no_update`, `UPDATE events SET body = replace(body, '"actor":"conformance"', '"actor":"mallory"') WHERE seq = 9`)
		rep, _ := verifyKeeping(t, l, v)
		fails(t, rep, verify.KindModified, 9)
	})
	t.Run("the locks table edited", func(t *testing.T) {
		l, db, v, _ := setup(t)
		exec(t, db, `DROP TRIGGER IF EXISTS locks_guard`, `UPDATE locks SET host_id = 'elsewhere' WHERE lock_name = 'c'`)
		rep, _ := verifyKeeping(t, l, v)
		fails(t, rep, verify.KindProjectionDrift, 0)
	})
	t.Run("an old event edited in place", func(t *testing.T) {
		l, db, v, _ := setup(t)
		exec(t, db, `DROP TRIGGER events_no_update`, `UPDATE events SET body = replace(body, '"actor":"conformance"', '"actor":"mallory"') WHERE seq = 2`)
		rep, _ := verifyKeeping(t, l, v)
		for _, p := range rep.Problems {
			if p.Kind == verify.KindModified {
				t.Errorf("the incremental verify read an event before its head: %+v", p)
			}
		}
		full, _ := verifyKeeping(t, l, nil)
		fails(t, full, verify.KindModified, 2)
	})
}
