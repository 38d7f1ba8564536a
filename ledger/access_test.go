package ledger

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// TestRecordAccessIsLedgerWide: a recorded export or verify is one event
// with no lock_name (its column ""), by this process's OS user, that makes
// no lock and changes none: list, project and verify's projection check
// see the same locks as before.
func TestRecordAccessIsLedgerWide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	if _, err := e.l.TryAcquire(ctx, req("a", "r1", os.Getpid())); err != nil {
		t.Fatal(err)
	}
	seq, err := e.l.RecordAccess(ctx, events.LedgerExported, Identity{Actor: "auditor"},
		&events.Exported{FirstSeq: 1, LastSeq: 1, Events: 1, Format: "jsonl", Destination: "/tmp/audit.jsonl"})
	if err != nil || seq != 2 {
		t.Fatalf("RecordAccess: seq %d, %v; want seq 2", seq, err)
	}
	var lock, typ string
	var body []byte
	if err := pgtest.Open(t, e.l.Source()).QueryRow(`SELECT lock_name, type, body FROM events WHERE seq = 2`).Scan(&lock, &typ, &body); err != nil {
		t.Fatal(err)
	}
	env, _, err := events.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	uid, _, ok := env.OSUser()
	if lock != "" || typ != string(events.LedgerExported) || strings.Contains(string(body), `"lock_name"`) ||
		env.Actor != "auditor" || !ok || uid != os.Getuid() {
		t.Fatalf("recorded export: lock_name column %q, type %s, body %s", lock, typ, body)
	}

	list, err := e.l.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "a" {
		t.Fatalf("list after the recorded export: %+v, %v", list, err)
	}
	rep, err := e.l.Project(ctx)
	if err != nil || rep.Changed() || rep.Locks != 1 || rep.RunRecorded != 3 {
		t.Fatalf("project after the recorded export: %+v, %v; want no change, 1 lock, its run recorded at seq 3", rep, err)
	}
	check, err := e.l.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !check.OK || check.Locks != 1 {
		t.Fatalf("verify after the ledger-wide events: %d locks, problems %+v", check.Locks, check.Problems)
	}
}

// TestRecordAccessRefusesWhatIsNotARead: RecordAccess records exports
// and verifies only, and nothing through a read-only open.
func TestRecordAccessRefusesWhatIsNotARead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	for _, typ := range []events.Type{events.LockAcquired, events.LedgerProjected} {
		if _, err := e.l.RecordAccess(ctx, typ, Identity{}, &events.LedgerProjectedPayload{}); err == nil {
			t.Errorf("RecordAccess(%s) appended", typ)
		}
	}
	ro, err := Open(ctx, e.root, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = ro.RecordAccess(ctx, events.LedgerVerified, Identity{}, &events.Verified{Result: events.AuditOK})
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("RecordAccess through a read-only open: %v, want ErrReadOnly", err)
	}
	if n := count(t, e.l); n != 0 {
		t.Fatalf("%d events after refused records", n)
	}
}
