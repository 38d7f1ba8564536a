package e2e

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/store"
)

// TestVerifyIncrementalFromTheKeptHead: a verify that finds the ledger
// intact keeps its head in the trust store; the next plain verify checks
// only the events after it and says so (text and --json), --full checks
// the whole log again, and a log cut below the kept head is checked whole
// and fails loudly, naming the seq it no longer holds.
func TestVerifyIncrementalFromTheKeptHead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "a", "--pid", self)
	clitest.Must(t, 0, root, "acquire", "b", "--pid", self)
	first := clitest.Verify(t, 0, root)
	if first.Check != "full" || first.VerifiedFrom != nil || first.FirstSeq != 1 {
		t.Fatalf("first verify: check %q, from %+v, first seq %d", first.Check, first.VerifiedFrom, first.FirstSeq)
	}
	if kept, _ := filepath.Glob(filepath.Join(clitest.TrustDir(root), "verified", "*.verified")); len(kept) != 1 {
		t.Fatalf("heads kept: %v, want one", kept)
	}
	clitest.Must(t, 0, root, "acquire", "c", "--pid", self)
	inc := clitest.Verify(t, 0, root)
	if inc.Check != "incremental" || inc.VerifiedFrom == nil || inc.VerifiedFrom.Seq != first.LastSeq || inc.FirstSeq != first.LastSeq+1 || inc.Locks != 3 {
		t.Fatalf("second verify: check %q, from %+v, seq %d-%d, %d locks; want incremental from seq %d", inc.Check, inc.VerifiedFrom, inc.FirstSeq, inc.LastSeq, inc.Locks, first.LastSeq)
	}
	text := clitest.Must(t, 0, root, "verify").Stdout
	if !strings.Contains(text, "checked      incremental: the events after seq "+strconv.FormatInt(inc.LastSeq, 10)) {
		t.Errorf("text report of an incremental verify:\n%s", text)
	}
	if full := clitest.Verify(t, 0, root, "--full"); full.Check != "full" || full.FirstSeq != 1 {
		t.Errorf("verify --full: check %q, first seq %d", full.Check, full.FirstSeq)
	}

	db := fixture.RawDB(t, root)
	for _, q := range []string{`DROP TRIGGER events_no_delete`, `DROP TRIGGER tlog_hashes_no_delete`,
		`DELETE FROM events WHERE seq > 2`, `DELETE FROM tlog_hashes WHERE seq > 2`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The whole log is checked (the signed head kept finds the cut), and
	// the report names the head it no longer holds.
	cut := clitest.Verify(t, 1, root)
	if cut.Check != "full" || cut.OK || !slices.ContainsFunc(cut.Notes, func(n string) bool { return strings.Contains(n, "no longer holds seq") }) {
		t.Errorf("verify of a log cut below the kept head: check %q, notes %q; problems %+v", cut.Check, cut.Notes, cut.Problems)
	}
}

// TestVerifyChecksTheWholeLogWhenTheKeptHeadCannotBeUsed: a kept head
// whose state, frontier or times cannot be verified from (damaged, or kept
// by an older lockledger) is not the ledger's damage: verify warns, checks
// the whole log, passes an intact ledger and keeps a head that can be used.
func TestVerifyChecksTheWholeLogWhenTheKeptHeadCannotBeUsed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "a", "--pid", strconv.Itoa(os.Getpid()))
	clitest.Verify(t, 0, root)
	kept, _ := filepath.Glob(filepath.Join(clitest.TrustDir(root), "verified", "*.verified"))
	if len(kept) != 1 {
		t.Fatalf("heads kept: %v, want one", kept)
	}
	good, err := os.ReadFile(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, old, new string }{
		{"its state at another seq", `"state":{"seq":`, `"state":{"seq":9`},
		{"a frontier hash that is not one", `"frontier":["`, `"frontier":["9`},
		{"no times of its events", `"max_at":"`, `"was_max_at":"`},
	} {
		bad := strings.Replace(string(good), c.old, c.new, 1)
		if bad == string(good) {
			t.Fatalf("%s: the kept head has no %s: %s", c.name, c.old, good)
		}
		if err := os.WriteFile(kept[0], []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		r := clitest.Must(t, 0, root, "verify", "--json")
		rep := clitest.DecodeVerify(t, r)
		if rep.Check != "full" || !rep.OK || !strings.Contains(r.Stderr, "cannot be read: checking the whole log") {
			t.Errorf("%s: check %q, OK %v; stderr %s; problems %+v", c.name, rep.Check, rep.OK, r.Stderr, rep.Problems)
		}
		if again := clitest.Verify(t, 0, root); again.Check != "incremental" {
			t.Errorf("%s: the next verify: check %q, want incremental from the head the full one kept", c.name, again.Check)
		}
	}
}

// TestVerifyIncrementalChecksTheSnapshotsStoredSince: a plain verify
// after the first compares the snapshot a write stored after the kept
// head with its fold: one whose recorded times were moved (so that who
// --at would fold from it for an instant before its events) fails it;
// moved after a verify whose head passed it, it makes the next verify
// check the whole log, which names it.
func TestVerifyIncrementalChecksTheSnapshotsStoredSince(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := int(store.SnapshotEvery) - 40
	if _, _, err := (fixture.Ledger{Events: n, Locks: 20, Start: start, Span: time.Duration(n) * 10 * time.Second}).Write(root); err != nil {
		t.Fatal(err)
	}
	clitest.Must(t, 0, root, "project")
	clitest.Verify(t, 0, root)
	db := fixture.RawDB(t, root)
	var maxAt string
	snapshot := func() bool {
		err := db.QueryRow(`SELECT max_at FROM snapshots WHERE seq = $1`, store.SnapshotEvery).Scan(&maxAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		return err == nil
	}
	self := strconv.Itoa(os.Getpid())
	for i := 0; !snapshot(); i++ {
		if i == 60 {
			t.Fatalf("no snapshot after %d acquisitions", i)
		}
		clitest.Must(t, 0, root, "acquire", fmt.Sprintf("x%d", i), "--pid", self)
	}
	setMaxAt := func(at string) {
		t.Helper()
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, q := range []string{`CREATE TEMP TABLE moved AS SELECT * FROM snapshots`, `UPDATE moved SET max_at = '` + at + `'`,
			`DELETE FROM snapshots`, `INSERT INTO snapshots SELECT * FROM moved`, `DROP TABLE moved`} {
			if _, err := tx.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	found := func(what, check string) {
		t.Helper()
		rep := clitest.Verify(t, 1, root)
		if rep.Check != check || !slices.ContainsFunc(rep.Problems, func(p clitest.VerifyProblem) bool {
			return p.Kind == "snapshot" && p.Seq == store.SnapshotEvery && strings.Contains(p.Detail, "records its events' times")
		}) {
			t.Errorf("%s: check %q (want %s), notes %q, problems %+v", what, rep.Check, check, rep.Notes, rep.Problems)
		}
	}
	was := maxAt
	setMaxAt(events.FormatTime(start))
	found("a snapshot after the kept head moved", "incremental")
	setMaxAt(was)
	if inc := clitest.Verify(t, 0, root); inc.Check != "incremental" {
		t.Fatalf("verify past the snapshot: check %q", inc.Check)
	}
	setMaxAt(events.FormatTime(start))
	found("a snapshot before the kept head moved", "full")
}
