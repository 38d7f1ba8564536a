package e2e

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/ledger"
)

// osUserOf is what an event body says about the OS user that wrote it.
type osUserOf struct {
	Seq   int64   `json:"seq"`
	Type  string  `json:"type"`
	Actor string  `json:"actor"`
	UID   *int    `json:"uid"`
	User  *string `json:"user"`
}

func eventUsers(t *testing.T, root string) []osUserOf {
	t.Helper()
	var out []osUserOf
	for _, b := range clitest.Strings(t, root, `SELECT body FROM events ORDER BY seq`) {
		var u osUserOf
		if err := json.Unmarshal([]byte(b), &u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// userName is the name os/user gives uid, "" when it has none.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return ""
}

// TestEveryEventRecordsTheOSUser: beside the actor a caller declares
// (--actor, $USER), every event records the real uid of the process that
// wrote it and that user's name, and the timeline shows them.
func TestEveryEventRecordsTheOSUser(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "r")
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--actor", "alice", "--pid", self).Stdout)
	clitest.Must(t, 3, root, "acquire", "deploy", "--actor", "bob", "--pid", self)
	clitest.Must(t, 0, root, "release", "deploy", "--request-id", rid)
	uid, name := os.Getuid(), userName(os.Getuid())
	evs := eventUsers(t, root)
	if len(evs) < 3 {
		t.Fatalf("%d events, want at least 3", len(evs))
	}
	for _, e := range evs {
		if e.UID == nil || *e.UID != uid || e.User == nil || *e.User != name {
			t.Errorf("seq %d %s (actor %s): uid %v user %v, want uid %d user %q", e.Seq, e.Type, e.Actor, e.UID, e.User, uid, name)
		}
	}
	if evs[0].Actor != "alice" {
		t.Fatalf("seq 1 actor %q, want alice (the declared actor stays as declared)", evs[0].Actor)
	}

	want := strconv.Itoa(uid)
	if name != "" {
		want = fmt.Sprintf("%d(%s)", uid, name)
	}
	table := clitest.Must(t, 0, root, "timeline", "--wide").Stdout
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if !strings.Contains(lines[0], "ACTOR") || !strings.Contains(lines[0], "OS USER") {
		t.Fatalf("timeline header: %q", lines[0])
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, " "+want+" ") {
			t.Errorf("timeline row without the OS user %q: %q", want, l)
		}
	}
	if !strings.Contains(lines[1], "alice") {
		t.Errorf("timeline row 1 lacks the actor alice: %q", lines[1])
	}

	recs, err := csv.NewReader(strings.NewReader(clitest.Must(t, 0, root, "timeline", "--format", "csv").Stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := recs[0]
	if head[len(head)-2] != "uid" || head[len(head)-1] != "user" {
		t.Fatalf("timeline csv header %v: want uid and user last", head)
	}
	for _, r := range recs[1:] {
		if r[len(r)-2] != strconv.Itoa(uid) || r[len(r)-1] != name {
			t.Errorf("timeline csv row %v: want uid %d user %q last", r, uid, name)
		}
	}
	recs, err = csv.NewReader(strings.NewReader(clitest.Must(t, 0, root, "export", "--format", "csv").Stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if h := recs[0]; h[len(h)-2] != "uid" || h[len(h)-1] != "user" {
		t.Fatalf("export csv header %v: want uid and user last", h)
	}
	for _, r := range recs[1:] {
		if r[len(r)-2] != strconv.Itoa(uid) || r[len(r)-1] != name {
			t.Errorf("export csv row %v: want uid %d user %q last", r, uid, name)
		}
	}
}

// TestOSUserIsTheProcessNotTheEnvironment: run as another user (uid
// 65534, with USER still saying "tester"), the events record that uid:
// the kernel's answer, not anything the caller can set.
func TestOSUserIsTheProcessNotTheEnvironment(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the command as another user")
	}
	asUser, base := unprivileged(t)
	root := filepath.Join(base, "r")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if r := asUser(root, "acquire", "deploy", "--pid", strconv.Itoa(os.Getpid())); r.Code != 0 {
		t.Fatalf("acquire as uid %d: exit %d: %s", nobody, r.Code, r.Stderr)
	}
	evs := eventUsers(t, root)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	e := evs[0]
	if e.Actor != "tester" || e.UID == nil || *e.UID != nobody || e.User == nil || *e.User != userName(nobody) {
		t.Fatalf("event by uid %d with USER=tester: actor %q uid %v user %v", nobody, e.Actor, e.UID, e.User)
	}
}

// TestLedgerWrittenBeforeOSUsersStillVerifies: events written before
// lockledger recorded the OS user (bodies without uid and user, chained as
// an older lockledger chained them) still verify, in the ledger and in an
// export, and read as "-" in the timeline.
func TestLedgerWrittenBeforeOSUsersStillVerifies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "r")
	l, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	genesis, host := l.Genesis(), l.Host()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	env := func(seq int64, typ events.Type, lock, req string) events.Envelope {
		at := time.Now().UTC() // after the ledger's created_at and in order, as an older lockledger stamped them
		return events.Envelope{EventID: events.NewULID(at), Seq: seq, Type: typ, SchemaVersion: events.SchemaVersion,
			At: events.FormatTime(at), LockName: lock, RequestID: req, Actor: "old-bot", HostID: host.ID, PID: 4242}
	}
	acq := func(token int64) *events.Acquired {
		return &events.Acquired{TTLSeconds: 900, Intent: "deploy", IntentVersion: "1", FencingToken: token,
			Metadata: map[string]string{}, PIDStart: "1", BootID: host.BootID}
	}
	old := []*events.Event{
		{Envelope: env(1, events.LockAcquired, "a", "req_a"), Payload: acq(1)},
		{Envelope: env(2, events.LockHeartbeat, "a", "req_a"), Payload: &events.Heartbeat{}},
		{Envelope: env(3, events.LockReleased, "a", "req_a"), Payload: &events.Released{HeldDurationSeconds: 2,
			Result: events.ResultSuccess, FencingToken: 1}},
		{Envelope: env(4, events.LockAcquired, "b", "req_b"), Payload: acq(4)},
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range old {
		if fixture.Append(t, db, ev); ev.Seq == 1 && ev.PrevHash != genesis {
			t.Fatalf("seq 1 chained from %s, not the genesis %s", ev.PrevHash, genesis)
		}
		if strings.Contains(string(ev.Body), `"uid"`) || strings.Contains(string(ev.Body), `"user"`) {
			t.Fatalf("an old body with uid or user: %s", ev.Body)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The older lockledger's projections of those events.
	clitest.Must(t, 0, root, "project")
	clitest.Must(t, 0, root, "verify")
	export := filepath.Join(t.TempDir(), "old.jsonl")
	clitest.Must(t, 0, root, "export", "-o", export)
	clitest.Must(t, 0, root, "verify", "--file", export, "--prev-hash", genesis)
	// New events go on the same chain, with the OS user.
	clitest.Must(t, 0, root, "acquire", "c", "--pid", strconv.Itoa(os.Getpid()))
	clitest.Must(t, 0, root, "verify")

	// SEQ TIME EVENT LOCK ACTOR "OS USER" ...: the actor is field 4, the OS user field 5.
	rows := strings.Split(strings.TrimSpace(clitest.Must(t, 0, root, "timeline", "--wide").Stdout), "\n")[1:]
	n := 0
	for _, l := range rows {
		f := strings.Fields(l)
		if f[4] == "old-bot" {
			n++
			if f[5] != "-" {
				t.Errorf("an event written before the OS user was recorded reads %q, want '-': %q", f[5], l)
			}
		}
	}
	if n != len(old) {
		t.Errorf("%d timeline rows by old-bot, want %d", n, len(old))
	}
	evs := eventUsers(t, root)
	if last := evs[len(evs)-1]; last.UID == nil || *last.UID != os.Getuid() {
		t.Errorf("the event appended after the old ones: uid %v, want %d", last.UID, os.Getuid())
	}
}
