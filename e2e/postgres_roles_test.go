package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// readmeRoles is a ledger on PostgreSQL created by its owner, with the
// README's roles made by the README's own block (renamed for this
// database): the owner's, a writer's and an auditor's URLs.
type readmeRoles struct {
	name                   string // the database
	owner, writer, auditor string
	ownerDB                *sql.DB
}

// at is the URL u (one of r's) reaching database db of the same cluster
// instead, as the same role: roles are the cluster's, and a database
// copied from r's (CREATE DATABASE ... TEMPLATE) carries r's grants.
func (r *readmeRoles) at(u, db string) string {
	return strings.Replace(u, "/"+r.name+"?", "/"+db+"?", 1)
}

// backUp makes database bak (pgtest.CreateDatabase's) the backup: a copy
// of r's database as it is now, which carries r's grants (see at). A
// template has no other session, so the owner's idle connections are
// closed first.
func (r *readmeRoles) backUp(t *testing.T, bak string) {
	t.Helper()
	c := pgtest.Get(t)
	if err := c.DropDatabase(bak); err != nil {
		t.Fatal(err)
	}
	r.ownerDB.SetMaxIdleConns(0)
	if err := c.Exec("CREATE DATABASE " + pgx.Identifier{bak}.Sanitize() + " TEMPLATE " + pgx.Identifier{r.name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	r.ownerDB.SetMaxIdleConns(2)
}

func newREADMERoles(t *testing.T) *readmeRoles {
	t.Helper()
	name := pgtest.CreateDatabase(t)
	owner := pgtest.Get(t).SocketURL(name)
	newPGHost(t, "owner-host", owner).must(t, 0, "run", "init", "--", "true")
	db := openSQL(t, owner)
	suffix := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	writer, auditor := "w_"+suffix, "a_"+suffix
	readme, err := os.ReadFile("../docs/postgresql.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pgtest.READMERoles(t, string(readme)) {
		s = strings.NewReplacer("lockledger_writer", writer, "lockledger_auditor", auditor).Replace(s)
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("PostgreSQL page's set-up %q: %v", s, err)
		}
	}
	t.Cleanup(func() {
		for _, r := range []string{writer, auditor} {
			db.Exec(`DROP OWNED BY ` + r)
			db.Exec(`DROP ROLE ` + r)
		}
	})
	as := func(role string) string {
		return strings.Replace(owner, "postgres://"+pgtest.Superuser+"@", "postgres://"+role+"@", 1)
	}
	return &readmeRoles{name: name, owner: owner, writer: as(writer), auditor: as(auditor), ownerDB: db}
}

func openSQL(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func scalar(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	var s string
	if err := db.QueryRow(q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

// publicTables is how many tables the public schema of the database at
// url holds, as text: "0" where no command was to make the ledger.
func publicTables(t *testing.T, url string) string {
	t.Helper()
	return scalar(t, openSQL(t, url), `SELECT count(*)::text FROM information_schema.tables WHERE table_schema = 'public'`)
}

// Every command a writer runs works for the README's writer role:
// exclusive and shared locks, semaphores, heartbeats, releases (forced
// too), take-overs, runs, checkpoints and every read.
func TestPostgresREADMEWriterRunsEveryWriterCommand(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	a, b := newPGHost(t, "writer-a", roles.writer), newPGHost(t, "writer-b", roles.writer)
	me := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(a.must(t, 0, "acquire", "job", "--pid", me).Stdout)
	a.must(t, 0, "heartbeat", "job", "--request-id", rid)
	a.must(t, 0, "release", "job", "--request-id", rid)
	a.must(t, 0, "run", "job", "--", "true")
	target := filepath.Join(t.TempDir(), "deploy.lock")
	full := []string{"--intent", "deploy", "--intent-version", "v2", "--metadata", "ticket=OPS-1", "--metadata", "by=ci",
		"--file", "beads:" + target, "--pid", me}
	rid = strings.TrimSpace(a.must(t, 0, append([]string{"acquire", "files"}, full...)...).Stdout)
	a.must(t, 0, "heartbeat", "files", "--request-id", rid)
	a.must(t, 0, "release", "files", "--request-id", rid)
	rid = strings.TrimSpace(a.must(t, 0, append([]string{"acquire", "files-shared", "--limit", "3"}, full[:len(full)-4]...)...).Stdout)
	a.must(t, 0, "heartbeat", "files-shared", "--request-id", rid)
	a.must(t, 0, "release", "files-shared", "--request-id", rid)

	// Shared holders and semaphore slots: lock_holders.
	s1 := strings.TrimSpace(a.must(t, 0, "acquire", "readers", "--shared", "--pid", me).Stdout)
	s2 := strings.TrimSpace(b.must(t, 0, "acquire", "readers", "--shared", "--pid", me).Stdout)
	a.must(t, 0, "heartbeat", "readers", "--request-id", s1)
	a.must(t, 0, "release", "readers", "--request-id", s1)
	b.must(t, 0, "release", "readers", "--request-id", s2)
	a.must(t, 0, "run", "readers", "--shared", "--", "true")
	m1 := strings.TrimSpace(a.must(t, 0, "acquire", "pool", "--limit", "2", "--pid", me).Stdout)
	m2 := strings.TrimSpace(b.must(t, 0, "acquire", "pool", "--limit", "2", "--pid", me).Stdout)
	a.must(t, 3, "acquire", "pool", "--limit", "2", "--pid", me)
	a.must(t, 0, "heartbeat", "pool", "--request-id", m1)
	a.must(t, 0, "release", "pool", "--request-id", m1)
	a.must(t, 0, "run", "pool", "--limit", "2", "--", "true")
	a.must(t, 0, "release", "pool", "--force", "--yes", "--request-id", m2, "--reason", "done with the pool")
	a.must(t, 0, "run", "pool", "--limit", "1", "--", "true")

	// Take-overs: a stale holder with --force, an active one with steal.
	b.must(t, 0, "acquire", "deploy", "--ttl", "1s", "--pid", me)
	for {
		r := a.run(t, "acquire", "deploy")
		if r.Code == 4 {
			break
		}
		if r.Code != 3 {
			t.Fatalf("acquire deploy while its holder's TTL runs out: exit %d\n%s", r.Code, r.Stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	taken := strings.TrimSpace(a.must(t, 0, "acquire", "deploy", "--force", "--pid", me).Stdout)
	b.must(t, 0, "steal", "deploy", "--reason", "the runner is gone", "--active", "--yes")
	a.must(t, 5, "heartbeat", "deploy", "--request-id", taken)
	a.must(t, 0, "release", "deploy", "--force", "--yes", "--reason", "cleanup")

	// Take-overs of dead holders (processes of this host that exited):
	// readers by an exclusive holder, an exclusive holder by a reader, a
	// semaphore's slot.
	holder := func() (string, func()) {
		c := exec.Command("sleep", "300")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(c.Process.Pid), func() { c.Process.Kill(); c.Wait() }
	}
	p1, end1 := holder()
	p2, end2 := holder()
	a.must(t, 0, "acquire", "rd", "--shared", "--pid", p1)
	a.must(t, 0, "acquire", "rd", "--shared", "--pid", p2)
	end1()
	end2()
	a.must(t, 0, "release", "rd", "--request-id", strings.TrimSpace(a.must(t, 0, "acquire", "rd", "--pid", me).Stdout))
	p3, end3 := holder()
	a.must(t, 0, "acquire", "ex", "--pid", p3)
	end3()
	a.must(t, 0, "release", "ex", "--request-id", strings.TrimSpace(a.must(t, 0, "acquire", "ex", "--shared", "--pid", me).Stdout))
	p4, end4 := holder()
	a.must(t, 0, "acquire", "slot", "--limit", "1", "--pid", p4)
	end4()
	a.must(t, 0, "release", "slot", "--request-id", strings.TrimSpace(a.must(t, 0, "acquire", "slot", "--limit", "1", "--pid", me).Stdout))
	if n := scalar(t, roles.ownerDB, `SELECT count(*)::text FROM events WHERE type = 'lock_stolen' AND lock_name IN ('rd', 'ex', 'slot')`); n != "4" {
		t.Errorf("%s take-overs of dead holders recorded, want 4", n)
	}

	// Checkpoints signed by a writer.
	key := filepath.Join(t.TempDir(), "signing.key")
	a.must(t, 0, "keygen", "--name", "writers", "-o", key)
	a.must(t, 0, "--signing-key", key, "checkpoint")

	for _, args := range [][]string{{"status", "deploy"}, {"list"}, {"who", "deploy"}, {"history", "deploy"},
		{"timeline"}, {"replay"}, {"export", "--format", "jsonl"}} {
		a.must(t, 0, args...)
	}
	v := clitest.DecodeVerify(t, a.must(t, 0, "verify", "--json"))
	if !v.OK || v.Recorded == 0 {
		t.Errorf("the writer's verify: ok %v, recorded at seq %d", v.OK, v.Recorded)
	}
	newPGHost(t, "owner-host", roles.owner).must(t, 0, "verify")
}

// A role that may only read cannot lock the writer lock, and an advisory
// lock it holds (the key writers once serialised on) holds up no writer.
// A writer's transaction that holds the writer lock past the busy timeout
// (2 s here, LOCKLEDGER_BUSY_TIMEOUT) fails the others, naming it; --wait
// tries again until it is let go.
func TestPostgresREADMEAuditorCannotStopTheWriters(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	ctx := context.Background()
	aud, err := openSQL(t, roles.auditor).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer aud.Close()
	for _, q := range []string{`SELECT id FROM writer_lock FOR UPDATE`, `SELECT id FROM writer_lock FOR SHARE`,
		`LOCK TABLE writer_lock IN EXCLUSIVE MODE`, `LOCK TABLE events IN EXCLUSIVE MODE`} {
		tx, err := aud.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, q); err == nil {
			t.Errorf("the auditor could %s", q)
		}
		tx.Rollback()
	}
	if _, err := aud.ExecContext(ctx, `SELECT pg_advisory_lock(1819240306, hashtext('public'))`); err != nil {
		t.Fatal(err)
	}
	w := newPGHost(t, "writer", roles.writer)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r := clitest.Exec(t, w.command(wctx, "run", "job", "--", "true"))
	if r.Code != 0 {
		t.Fatalf("run while the auditor holds the old advisory key: exit %d\n%s", r.Code, r.Stderr)
	}

	// Another writer's transaction holds the writer lock.
	holder, err := openSQL(t, roles.writer).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, `SELECT id FROM writer_lock FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	busy := invocation.EnvBusyTimeout + "=2s"
	start := time.Now()
	c := w.command(wctx, "acquire", "job")
	c.Env = append(c.Env, busy)
	r = clitest.Exec(t, c)
	if r.Code != 1 || !strings.Contains(r.Stderr, "writer_lock") || !strings.Contains(r.Stderr, "busy timeout") {
		t.Errorf("acquire while the writer lock is held: exit %d after %s\n%s", r.Code, time.Since(start), r.Stderr)
	}
	wait := w.command(ctx, "acquire", "job", "--wait", "60s", "--pid", strconv.Itoa(os.Getpid()))
	wait.Env = append(wait.Env, busy)
	var out, errb bytes.Buffer
	wait.Stdout, wait.Stderr = &out, &errb
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wait.Wait() }()
	pause := func() {
		select {
		case err := <-done:
			t.Fatalf("acquire --wait ended while the writer lock was held: %v\n%s", err, errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The waiter's first try times out and it tries again: its wait for
	// the lock starts anew.
	waiting := func() string {
		return scalar(t, roles.ownerDB, `SELECT coalesce(max(query_start)::text, '') FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database()`)
	}
	first := waiting()
	for ; first == ""; first = waiting() {
		pause()
	}
	for again := waiting(); again == "" || again == first; again = waiting() {
		pause()
	}
	if err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("acquire --wait once the writer lock was let go: %v\n%s", err, errb.String())
	}
	newPGHost(t, "auditor", roles.auditor).must(t, 0, "verify")
}

// The writer role cannot edit the projection into a second holder: a
// change to locks or lock_holders that no event of its transaction makes
// fails, and the other host stays blocked. The owner's edit is not
// refused, and verify names it.
func TestPostgresREADMEWriterCannotEditTheProjection(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	a, b := newPGHost(t, "host-a", roles.writer), newPGHost(t, "host-b", roles.writer)
	me := strconv.Itoa(os.Getpid())
	old := strings.TrimSpace(a.must(t, 0, "acquire", "prod", "--pid", me).Stdout)
	a.must(t, 0, "release", "prod", "--request-id", old)
	wdb := openSQL(t, roles.writer)
	released := scalar(t, wdb, `SELECT seq::text FROM events WHERE type = 'lock_released' AND request_id = $1`, old)
	// Held for longer than the edits below take on a loaded machine:
	// host-b must find them held, not stale.
	a.must(t, 0, "acquire", "prod", "--ttl", "1h", "--pid", me)
	a.must(t, 0, "acquire", "pool", "--limit", "1", "--ttl", "1h", "--pid", me)
	edits := []string{
		`DELETE FROM lock_holders WHERE lock_name = 'prod'`,
		`UPDATE lock_holders SET exclusive = 0 WHERE lock_name = 'prod'`,
		`UPDATE lock_holders SET heartbeat_at = '2020-01-01T00:00:00Z' WHERE lock_name = 'prod'`,
		`UPDATE lock_holders SET ttl_seconds = 1 WHERE lock_name = 'prod'`,
		`UPDATE lock_holders SET host_id = 'host-b', pid = 1 WHERE lock_name = 'prod'`,
		`UPDATE lock_holders SET intent = 'mallory', metadata = '{"by":"mallory"}' WHERE lock_name = 'prod'`,
		`UPDATE locks SET request_id = '` + old + `', updated_seq = ` + released + ` WHERE lock_name = 'prod'`,
		`UPDATE locks SET host_id = 'host-b' WHERE lock_name = 'prod'`,
		`DELETE FROM locks WHERE lock_name = 'prod'`,
		// The released holding's row, back: its updated_seq is its own, but
		// a later event ended it.
		`INSERT INTO lock_holders (lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
			created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq, pid_ns, exclusive, targets)
			SELECT 'prod', e.request_id, e.actor, '', '', b ->> 'host_id', (b ->> 'pid')::bigint, coalesce(b ->> 'pid_start', ''),
			coalesce(b ->> 'boot_id', ''), e.at, e.at, (b ->> 'ttl_seconds')::bigint, coalesce(b -> 'metadata', '{}')::text,
			e.seq, 1, e.seq, (b ->> 'pid_ns')::bigint, 1, '[]'
			FROM events e, LATERAL (SELECT convert_from(e.body, 'UTF8')::jsonb AS b) x
			WHERE e.type = 'lock_acquired' AND e.request_id = '` + old + `'`,
		`DELETE FROM lock_holders WHERE lock_name = 'pool'`,
		`UPDATE lock_holders SET heartbeat_at = '2020-01-01T00:00:00Z' WHERE lock_name = 'pool'`,
		`UPDATE lock_holders SET slot_limit = 2 WHERE lock_name = 'pool'`,
	}
	for _, q := range edits {
		if _, err := wdb.Exec(q); err == nil {
			t.Errorf("the writer role could %s", q)
		}
		if r := b.run(t, "acquire", "prod"); r.Code != 3 {
			t.Fatalf("after %s: host-b's acquire prod: exit %d, want 3 (held by host-a)\n%s", q, r.Code, r.Stderr)
		}
		if r := b.run(t, "acquire", "pool", "--limit", "1"); r.Code != 3 {
			t.Fatalf("after %s: host-b's acquire pool --limit 1: exit %d, want 3\n%s", q, r.Code, r.Stderr)
		}
	}
	auditor := newPGHost(t, "auditor", roles.auditor)
	auditor.must(t, 0, "verify")
	for _, q := range []string{`DELETE FROM lock_holders WHERE lock_name IN ('prod', 'pool')`} {
		if _, err := roles.ownerDB.Exec(q); err != nil {
			t.Fatalf("the owner's edit %s: %v", q, err)
		}
	}
	v := clitest.DecodeVerify(t, auditor.must(t, 1, "verify", "--json"))
	drift := map[string]bool{}
	for _, p := range v.Problems {
		drift[p.Lock] = drift[p.Lock] || p.Kind == "projection_drift"
	}
	if !drift["prod"] || !drift["pool"] {
		t.Errorf("verify after the owner's edits names no projection_drift of prod and pool: %+v", v.Problems)
	}
}

// A trigger function replaced by a no-op (the triggers left in place)
// guards nothing: the tail of the log (here the record of a verify, which
// no locks row points at) is cut without a trace, and verify names the
// function.
func TestPostgresREADMEReplacedTriggerFunctionFailsVerify(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	w := newPGHost(t, "writer", roles.writer)
	for range 3 {
		w.must(t, 0, "run", "job", "--", "true")
	}
	w.must(t, 0, "verify")
	for _, q := range []string{
		// The function that guards the events' DELETE (a prune's open horizon only).
		`CREATE OR REPLACE FUNCTION lockledger_events_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$`,
		`DELETE FROM events WHERE seq = (SELECT max(seq) FROM events) AND type = 'ledger_verified'`,
		`DELETE FROM tlog_hashes WHERE seq > (SELECT max(seq) FROM events)`,
	} {
		if _, err := roles.ownerDB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if n := scalar(t, roles.ownerDB, `SELECT count(*)::text FROM events WHERE type = 'ledger_verified'`); n != "0" {
		t.Fatalf("the cut left %s ledger_verified events", n)
	}
	v := clitest.DecodeVerify(t, newPGHost(t, "auditor", roles.auditor).run(t, "verify", "--json"))
	found := false
	for _, p := range v.Problems {
		found = found || p.Kind == "trigger" && strings.Contains(p.Detail, "function lockledger_events_delete")
	}
	if v.OK || !found {
		t.Errorf("verify after the function was replaced: ok %v, %+v", v.OK, v.Problems)
	}
}

// A writer role missing one right a writer needs (EXECUTE on the decision
// calls, revoked from PUBLIC; INSERT on a table) is refused by the database
// at the group's read or write: exit 1 with the database's own message,
// naming the object, and where and what to do; nothing is recorded and
// no lock file is left.
func TestPostgresREADMEWriterMissingAGrantIsToldWhich(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	writer := strings.TrimPrefix(strings.Split(roles.writer, "@")[0], "postgres://")
	w := newPGHost(t, "writer", roles.writer)
	w.must(t, 0, "run", "warm", "--", "true")
	for _, c := range []struct {
		name, revoke, grant, denied string
	}{
		{"read-call", `REVOKE EXECUTE ON FUNCTION lockledger_read_decision(text, text, boolean) FROM PUBLIC`,
			`GRANT EXECUTE ON FUNCTION lockledger_read_decision(text, text, boolean) TO PUBLIC`, "permission denied for function lockledger_read_decision"},
		{"write-call", `REVOKE EXECUTE ON FUNCTION lockledger_write_decision(json) FROM PUBLIC`,
			`GRANT EXECUTE ON FUNCTION lockledger_write_decision(json) TO PUBLIC`, "permission denied for function lockledger_write_decision"},
		{"tree-rows", `REVOKE INSERT ON tlog_hashes FROM ` + writer, `GRANT INSERT ON tlog_hashes TO ` + writer, "permission denied for table tlog_hashes"},
		{"holders", `REVOKE INSERT, UPDATE, DELETE ON lock_holders FROM ` + writer, `GRANT INSERT, UPDATE, DELETE ON lock_holders TO ` + writer,
			"permission denied for table lock_holders"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := roles.ownerDB.Exec(c.revoke); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if _, err := roles.ownerDB.Exec(c.grant); err != nil {
					t.Fatal(err)
				}
			}()
			head := scalar(t, roles.ownerDB, `SELECT count(*)::text || '/' || max(seq)::text || '/' || (SELECT hash FROM events ORDER BY seq DESC LIMIT 1) FROM events`)
			r := w.run(t, "acquire", "refused-"+c.name)
			if r.Code != 1 || !strings.Contains(r.Stderr, c.denied) || !strings.Contains(r.Stderr, "database "+roles.name) ||
				!strings.Contains(r.Stderr, "the role lacks a right this command needs; docs/postgresql.md lists a writer's grants") {
				t.Errorf("acquire with %q: exit %d, want 1 naming %q, the database and the grants to make\nstderr: %s", c.revoke, r.Code, c.denied, r.Stderr)
			}
			if got := scalar(t, roles.ownerDB, `SELECT count(*)::text || '/' || max(seq)::text || '/' || (SELECT hash FROM events ORDER BY seq DESC LIMIT 1) FROM events`); got != head {
				t.Errorf("the refused acquire changed the log: %s, was %s", got, head)
			}
			if _, err := os.Stat(filepath.Join(w.root, "locks", "refused-"+c.name+".lock")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused acquire's lock file: %v", err)
			}
		})
	}
}
