package e2e

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// downgradeTo12 makes the ledger of roles a ledger as the release before
// migration 13 left it: the waiters' index dropped, the decision read as
// 0012 made it, and schema_migrations at 12.
func downgradeTo12(t *testing.T, roles *readmeRoles) {
	t.Helper()
	m12, err := os.ReadFile("../migrations/postgres/0012_decision_calls.sql")
	if err != nil {
		t.Fatal(err)
	}
	read := string(m12)
	read = read[strings.Index(read, "CREATE FUNCTION lockledger_read_decision"):strings.Index(read, "CREATE FUNCTION lockledger_write_decision")]
	for _, q := range []string{`DROP INDEX events_waiters`, strings.Replace(read, "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1),
		`DELETE FROM schema_migrations WHERE version = 13`} {
		if _, err := roles.ownerDB.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
}

// TestPostgresFleetMidUpgrade: a host upgraded before the owner migrated
// the database (at 12, this lockledger needs 13) and writing as the
// writer role is refused at its open, exit 1, by a message that names
// both versions, the owner and the command that migrates, with nothing
// written: no event, no root, no trust store. Its reads, and the
// auditor's, read the schema-12 database as it stands. The owner's
// command of docs/postgresql.md's "Upgrading to schema 13", run as
// written, migrates it; the writer then writes.
func TestPostgresFleetMidUpgrade(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	downgradeTo12(t, roles)
	counts := func() string {
		return scalar(t, roles.ownerDB, `SELECT (SELECT count(*) FROM events) || '/' || (SELECT max(version) FROM schema_migrations)`)
	}
	before := counts()
	if !strings.HasSuffix(before, "/12") {
		t.Fatalf("downgraded: events/version %s", before)
	}
	dir := t.TempDir()
	writer := &pgHost{id: "writer-host", root: filepath.Join(dir, "writer-root"), url: roles.writer, trust: filepath.Join(dir, "writer-trust")}
	for _, args := range [][]string{{"acquire", "deploy-prod"}, {"run", "deploy-prod", "--", "true"}} {
		r := writer.run(t, args...)
		if r.Code != 1 {
			t.Errorf("%v as the writer on a schema-12 database: exit %d, want 1\nstderr: %s", args, r.Code, r.Stderr)
		}
		for _, want := range []string{"schema is version 12", "needs 13", "owner", "verify", "nothing was written"} {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("%v as the writer on a schema-12 database does not say %q:\n%s", args, want, r.Stderr)
			}
		}
		for _, p := range []string{writer.root, writer.trust} {
			if _, err := os.Lstat(p); !os.IsNotExist(err) {
				t.Errorf("%v as the writer left %s behind (%v)", args, p, err)
			}
		}
		if after := counts(); after != before {
			t.Errorf("%v as the writer: events/version %s, were %s", args, after, before)
		}
	}
	auditor := &pgHost{id: "auditor-host", root: filepath.Join(dir, "auditor-root"), url: roles.auditor, trust: filepath.Join(dir, "auditor-trust")}
	for _, h := range []*pgHost{writer, auditor} {
		for _, args := range [][]string{{"status", "init"}, {"history", "init"}, {"verify"}} {
			if r := h.run(t, args...); r.Code != 0 {
				t.Errorf("%s: %v on a schema-12 database: exit %d\nstderr: %s", h.id, args, r.Code, r.Stderr)
			} else if args[0] == "verify" && !strings.Contains(r.Stderr, "not recorded") {
				t.Errorf("%s: verify on a schema-12 database does not say it was not recorded:\n%s", h.id, r.Stderr)
			}
		}
	}
	if after := counts(); after != before {
		t.Errorf("the reads: events/version %s, were %s", after, before)
	}

	// The owner's upgrade, as docs/postgresql.md writes it.
	script, _ := shellScript(readmeSection(t, "**Upgrading to schema 13.**", "Migration 13 adds"))
	addr := regexp.MustCompile(`'postgres://\w+@db\.internal/\w+'`)
	if n := len(addr.FindAllString(script, -1)); n != 1 {
		t.Fatalf("the upgrade's block names the database %d times, want once:\n%s", n, script)
	}
	script = addr.ReplaceAllString(script, strconv.Quote(roles.owner))
	bin, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "lockledger"), []byte("#!/bin/sh\nexec "+strconv.Quote(clitest.Bin())+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eu", "-o", "pipefail", "-c", script)
	cmd.Env = append(defaultRootEnv(home), "PATH="+bin+":"+os.Getenv("PATH"))
	if r := clitest.Exec(t, cmd); r.Code != 0 || strings.Contains(r.Stderr, "not recorded") {
		t.Fatalf("the owner's upgrade as written: exit %d\nscript:\n%s\nstderr: %s", r.Code, script, r.Stderr)
	}
	if v := scalar(t, roles.ownerDB, `SELECT max(version)::text FROM schema_migrations`); v != "13" {
		t.Fatalf("after the owner's upgrade the schema is at %s, want 13", v)
	}
	writer.must(t, 0, "run", "deploy-prod", "--", "true")
}

// TestPostgresFleetMidUpgradeThroughPgBouncer: two writer hosts that reach
// a schema-12 database through PgBouncer (transaction pooling) are each
// refused as TestPostgresFleetMidUpgrade's is, nothing written; the
// owner's verify through the same PgBouncer migrates it; then both hosts'
// runs, started together on one lock, take turns.
func TestPostgresFleetMidUpgradeThroughPgBouncer(t *testing.T) {
	t.Parallel()
	b := pgtest.GetBouncer(t)
	roles := newREADMERoles(t)
	downgradeTo12(t, roles)
	through := func(u string) string {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		bounced, err := url.Parse(b.URL(roles.name))
		if err != nil {
			t.Fatal(err)
		}
		bounced.User = parsed.User
		return bounced.String()
	}
	dir := t.TempDir()
	hosts := []*pgHost{
		{id: "bounced-1", root: filepath.Join(dir, "root-1"), url: through(roles.writer), trust: filepath.Join(dir, "trust-1")},
		{id: "bounced-2", root: filepath.Join(dir, "root-2"), url: through(roles.writer), trust: filepath.Join(dir, "trust-2")},
	}
	events := func() string { return scalar(t, roles.ownerDB, `SELECT count(*)::text FROM events`) }
	before := events()
	for _, h := range hosts {
		if r := h.run(t, "run", "deploy", "--", "true"); r.Code != 1 || !strings.Contains(r.Stderr, "schema is version 12") {
			t.Errorf("%s through PgBouncer on a schema-12 database: exit %d, want 1 naming the versions\nstderr: %s", h.id, r.Code, r.Stderr)
		}
		if _, err := os.Lstat(h.root); !os.IsNotExist(err) {
			t.Errorf("%s left its root behind (%v)", h.id, err)
		}
	}
	if after := events(); after != before {
		t.Fatalf("the refused hosts wrote: %s events, were %s", after, before)
	}
	owner := &pgHost{id: "owner-host", root: filepath.Join(dir, "owner-root"), url: through(roles.owner)}
	if r := owner.must(t, 0, "verify"); strings.Contains(r.Stderr, "not recorded") {
		t.Fatalf("the owner's verify through PgBouncer did not record (nor migrate):\n%s", r.Stderr)
	}
	if v := scalar(t, roles.ownerDB, `SELECT max(version)::text FROM schema_migrations`); v != "13" {
		t.Fatalf("after the owner's verify through PgBouncer the schema is at %s, want 13", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var cmds []*exec.Cmd
	for _, h := range hosts {
		c := h.command(ctx, "run", "deploy", "--wait", "30s", "--", "sleep", "0.2")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("%s's run after the upgrade: %v", hosts[i].id, err)
		}
	}
	if n := scalar(t, roles.ownerDB, `SELECT count(*)::text FROM events WHERE type = 'lock_acquired' AND lock_name = 'deploy'`); n != "2" {
		t.Errorf("after the upgrade the two hosts' runs acquired deploy %s times, want 2", n)
	}
	newPGHost(t, "auditor-host", roles.auditor).must(t, 0, "verify")
}
