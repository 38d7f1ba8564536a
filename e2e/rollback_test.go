package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testlog"
)

// fencingToken is the fencing token an acquire printed with --json.
func fencingToken(t *testing.T, out string) int {
	t.Helper()
	i := strings.Index(out, `"fencing_token":`)
	if i < 0 {
		t.Fatalf("no fencing token in %s", out)
	}
	rest := out[i+len(`"fencing_token":`):]
	n, err := strconv.Atoi(strings.TrimSpace(rest[:strings.IndexAny(rest, ",}")]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPostgresHostRefusesARolledBackOrAnotherLedger: a host that has
// written to a ledger refuses the database restored from a backup (an
// older head) and another database, naming both ledgers, until
// project --accept-rollback records that the host goes on from there.
// The hosts write as the README's writer role and read as its auditor;
// the backup and restore are the superuser's, project the owner's.
func TestPostgresHostRefusesARolledBackOrAnotherLedger(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	bak := pgtest.CreateDatabase(t)
	h := newPGHost(t, "web", roles.writer)
	for _, lock := range []string{"a", "b"} {
		rid := strings.TrimSpace(h.must(t, 0, "acquire", lock).Stdout)
		h.must(t, 0, "release", lock, "--request-id", rid)
	}
	roles.backUp(t, bak)
	seen := fencingToken(t, h.must(t, 0, "acquire", "deploy", "--json").Stdout)

	restored := &pgHost{id: h.id, root: h.root, url: roles.at(roles.writer, bak)}
	r := restored.must(t, 1, "acquire", "release-train")
	if !strings.Contains(r.Stderr, "an older state of it") || !strings.Contains(r.Stderr, "seq "+strconv.Itoa(seen)) {
		t.Errorf("the refusal of the restored database does not name both heads: %s", r.Stderr)
	}
	// Another host goes on writing to the restored database, past the
	// head this host saw: another history of the ledger. The copy kept
	// the README's grants: the writer role connects and writes there.
	fleet := newPGHost(t, "other-host", roles.at(roles.writer, bak))
	fleet.trust = filepath.Join(t.TempDir(), "trust")
	for _, lock := range []string{"x", "y", "z"} {
		fleet.must(t, 0, "acquire", lock)
	}
	if r := restored.must(t, 1, "acquire", "release-train"); !strings.Contains(r.Stderr, "another history of it") {
		t.Errorf("the restored database, written past the head seen: %s", r.Stderr)
	}
	// Another ledger is no rollback to accept: the writer's refusal, a
	// reader's warning and verify's problem say what is wrong and what to
	// do instead.
	others := newREADMERoles(t)
	other := &pgHost{id: h.id, root: h.root, url: others.writer}
	if r := other.must(t, 1, "acquire", "deploy"); !strings.Contains(r.Stderr, "another ledger") {
		t.Errorf("the refusal of another database does not say so: %s", r.Stderr)
	}
	for _, r := range []clitest.Result{other.must(t, 1, "acquire", "deploy"), other.must(t, 0, "list"),
		(&pgHost{id: h.id, root: h.root, url: others.at(others.auditor, others.name)}).must(t, 1, "verify")} {
		out := r.Stdout + r.Stderr
		if strings.Contains(out, "accept-rollback") || !strings.Contains(out, "a root of its own") {
			t.Errorf("another ledger's refusal or warning advises accepting a rollback, or not a root of its own: %s", out)
		}
	}
	// A reader is not refused; its verify fails against the head this user
	// signed before the restore.
	(&pgHost{id: h.id, root: h.root, url: roles.at(roles.auditor, bak)}).must(t, 1, "verify")

	owner := &pgHost{id: h.id, root: h.root, url: roles.at(roles.owner, bak)}
	r = owner.must(t, 0, "project", "--accept-rollback", "--json")
	if !strings.Contains(r.Stdout, `"rollback_accepted"`) {
		t.Errorf("project --accept-rollback does not report the rollback: %s", r.Stdout)
	}
	// The lost history's holder of deploy still has its lock file here: a
	// lock file the restored ledger did not write, left alone and held.
	restored.must(t, 3, "acquire", "deploy")
	restored.must(t, 0, "acquire", "deploy2")
	var body string
	db := pgtest.Open(t, roles.at(roles.auditor, bak))
	if err := db.QueryRow(`SELECT body FROM events WHERE type = 'ledger_projected'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `"seq":`+strconv.Itoa(seen)+`}`) || !strings.Contains(body, `"rollback_accepted":{`) {
		t.Errorf("ledger_projected does not record the pin it gave up: %s", body)
	}
	// The root now pins the restored ledger: the original database is the
	// one refused.
	if r := h.must(t, 1, "acquire", "other"); !strings.Contains(r.Stderr, "refusing to write there") {
		t.Errorf("back on the original database: %s", r.Stderr)
	}
}

// TestRestoredLedgerFileIsRefused: ROOT/ledger.db put back from a backup
// (the same ledger, an older head) is refused too.
func TestRestoredLedgerFileIsRefused(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "a").Stdout)
	clitest.Must(t, 0, root, "release", "a", "--request-id", rid)
	restore := restoreLedgerFile(t, root)
	seen := fencingToken(t, clitest.Must(t, 0, root, "acquire", "deploy", "--json").Stdout)
	clitest.Must(t, 0, root, "acquire", "other")
	restore()
	r := clitest.Must(t, 1, root, "acquire", "deploy2")
	if !strings.Contains(r.Stderr, "an older state of it") {
		t.Errorf("the restored ledger.db: %s", r.Stderr)
	}
	clitest.Must(t, 0, root, "project", "--accept-rollback")
	if got := fencingToken(t, clitest.Must(t, 0, root, "acquire", "deploy2", "--json").Stdout); got > seen+1 {
		t.Errorf("token %d after the accepted rollback", got)
	}
}

// restoreLedgerFile saves ROOT/ledger.db, and returns the function that
// puts it back as it was then, as a restore of a backup of the database alone does: the lock
// files and the pin of the host stay as the host left them.
func restoreLedgerFile(t *testing.T, root string) (restore func()) {
	t.Helper()
	backup := t.TempDir()
	files := []string{"ledger.db", "ledger.db-wal", "ledger.db-shm"}
	copyFiles := func(from, to string) {
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(from, f))
			if os.IsNotExist(err) {
				os.Remove(filepath.Join(to, f))
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, f), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyFiles(root, backup)
	return func() { copyFiles(backup, root) }
}

// TestEveryCommandOnARestoredLedgerNamesTheRestore: on a host whose pin
// saw the ledger further on, every command says that the ledger is behind
// what the host saw (a restore or a rollback) and what to do: the writers
// refuse, and the readers read on saying so (an error line, which --quiet
// keeps). The host's own lock file of
// an event the restore lost is not called another tool's, and verify
// fails even on an unsigned ledger, where no kept head shows the cut.
func TestEveryCommandOnARestoredLedgerNamesTheRestore(t *testing.T) {
	t.Parallel()
	for _, unsigned := range []bool{false, true} {
		root := filepath.Join(t.TempDir(), "root")
		if unsigned {
			clitest.Unsigned(t, root)
		}
		rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "a").Stdout)
		clitest.Must(t, 0, root, "release", "a", "--request-id", rid)
		restore := restoreLedgerFile(t, root)
		clitest.Must(t, 0, root, "acquire", "deploy")
		restore()
		const cause, remedy = "restored from a backup or rolled back", "lockledger project --accept-rollback"
		for _, args := range [][]string{{"acquire", "x"}, {"run", "y", "--", "true"}} {
			r := clitest.Must(t, 1, root, args...)
			if !strings.Contains(r.Stderr, cause) || !strings.Contains(r.Stderr, remedy) {
				t.Errorf("unsigned %v: %s does not name the restore and what to do: %s", unsigned, args[0], r.Stderr)
			}
		}
		for _, args := range [][]string{{"status", "deploy"}, {"status", "deploy", "--quiet"}, {"list"}, {"history", "deploy"}, {"timeline"}, {"verify"}} {
			want := 0
			if args[0] == "verify" {
				want = 1
			}
			r := clitest.Must(t, want, root, args...)
			if !strings.Contains(r.Stderr, cause) || !strings.Contains(r.Stderr, remedy) {
				t.Errorf("unsigned %v: %s does not say the ledger is behind what this host saw: %s", unsigned, args[0], r.Stderr)
			}
			if strings.Contains(r.Stdout, "another tool") || strings.Contains(r.Stdout, "did not write") || strings.Contains(r.Stdout, "(foreign)") {
				t.Errorf("unsigned %v: %s calls the host's own lock file another tool's: %s", unsigned, args[0], r.Stdout)
			}
		}
		v := clitest.Must(t, 1, root, "verify")
		if !strings.Contains(v.Stdout, "truncated: this root's pin") || !strings.Contains(v.Stdout, "lock files the ledger does not hold") {
			t.Errorf("unsigned %v: verify does not report the pin's head as the one cut: %s", unsigned, v.Stdout)
		}
		if s := clitest.Must(t, 0, root, "status", "deploy").Stdout; !strings.Contains(s, "deploy: held") {
			t.Errorf("unsigned %v: the lost holding's lock file no longer holds the lock: %s", unsigned, s)
		}
		p := clitest.Must(t, 0, root, "project", "--accept-rollback").Stdout
		if !strings.Contains(p, "perhaps holders from the events the rollback gave up): deploy") || strings.Contains(p, "foreign") {
			t.Errorf("unsigned %v: project --accept-rollback calls the lost holding's lock file another tool's: %s", unsigned, p)
		}
	}
}

// TestARestoredRootNamesTheRestore: a whole root put back from an older
// copy (cp -a: its pin too) is refused by the head kept in the trust
// store, and the refusal says that an older copy may have been put back
// and how to go on from it.
func TestARestoredRootNamesTheRestore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "a").Stdout)
	clitest.Must(t, 0, root, "release", "a", "--request-id", rid)
	clitest.Copy(t, root, filepath.Join(dir, "backup"))
	clitest.Must(t, 0, root, "acquire", "deploy")
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	clitest.Copy(t, filepath.Join(dir, "backup"), root)
	r := clitest.Must(t, 1, root, "acquire", "x")
	if !strings.Contains(r.Stderr, "an older copy of it (a backup) put back") || !strings.Contains(r.Stderr, "lockledger project --accept-rollback") {
		t.Errorf("the refusal on a restored root does not name the restore and what to do: %s", r.Stderr)
	}
	clitest.Must(t, 0, root, "project", "--accept-rollback")
	clitest.Must(t, 0, root, "acquire", "x")
}

// TestADatabaseRestoredUnderARunIsStillRefused: a PostgreSQL database
// restored (pg_dump, then DROP, CREATE and pg_restore) while a host's run
// holds a lock on it: the run loses its lock, and the head it finds at
// exit is below the pin it opened with. The pin stays where it was, so
// the host's next write refuses the restored ledger as it would have had
// no run been going. Before, the run moved the pin back to the restored
// head at exit and an unsigned host then wrote there without a word.
func TestADatabaseRestoredUnderARunIsStillRefused(t *testing.T) {
	t.Parallel()
	c := pgtest.Get(t)
	name := pgtest.CreateDatabase(t)
	h := newPGHost(t, "web", c.SocketURL(name))
	clitest.Unsigned(t, h.root) // only the pin can notice
	rid := strings.TrimSpace(h.must(t, 0, "acquire", "a", "--pid", "1").Stdout)
	h.must(t, 0, "release", "a", "--request-id", rid)
	restore := dumpDatabase(t, c, name)
	for _, lock := range []string{"b", "c", "d"} {
		h.must(t, 0, "acquire", lock, "--pid", "1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := h.command(ctx, "run", "deploy", "--ttl", "3s", "--", "sleep", "30")
	var stderr testlog.Buffer
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	awaitCondition(t, "the run holding its lock", func() bool { return strings.Contains(stderr.String(), "acquired") })
	restore()
	var exit *exec.ExitError
	if err := run.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 5 {
		t.Fatalf("the run on the restored database: %v, want exit 5 (lock lost)\n%s", err, stderr.String())
	}
	if r := h.must(t, 1, "acquire", "x", "--pid", "1"); !strings.Contains(r.Stderr, "an older state of it") {
		t.Errorf("the next write after the run: %s", r.Stderr)
	}
}

// TestAFailedAcceptRollbackAcceptsNothing: a writer host told to run
// project --accept-rollback on a restored database runs it with its own
// role, which may not project (the owner's): the run fails, exit 1, and
// accepts nothing. The root's pin and the signed head kept in the trust
// store stay as they were, so the host still refuses the restored
// ledger; the owner's run then records the acceptance, and the host goes
// on. Before, the failed run had already moved the pin and dropped the
// head: the host wrote to the restored ledger at once, and verify passed,
// with no ledger_projected recording the rollback.
func TestAFailedAcceptRollbackAcceptsNothing(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	bak := pgtest.CreateDatabase(t)
	h := newPGHost(t, "web", roles.writer)
	rid := strings.TrimSpace(h.must(t, 0, "acquire", "a").Stdout)
	h.must(t, 0, "release", "a", "--request-id", rid)
	roles.backUp(t, bak)
	h.must(t, 0, "acquire", "deploy")
	pin, err := os.ReadFile(filepath.Join(h.root, "ledger.pin"))
	if err != nil {
		t.Fatal(err)
	}
	restored := &pgHost{id: h.id, root: h.root, url: roles.at(roles.writer, bak)}
	if r := restored.must(t, 1, "project", "--accept-rollback"); !strings.Contains(r.Stderr, "project, import, prune and unprune are the owner's") {
		t.Errorf("a writer's project is not told the command is the owner's: %s", r.Stderr)
	}
	if after, err := os.ReadFile(filepath.Join(h.root, "ledger.pin")); err != nil || string(after) != string(pin) {
		t.Errorf("the failed accept moved the pin: %q -> %q (%v)", pin, after, err)
	}
	if r := restored.must(t, 1, "acquire", "x"); !strings.Contains(r.Stderr, "an older state of it") {
		t.Errorf("after the failed accept: %s", r.Stderr)
	}
	restored.must(t, 1, "verify") // against the head kept before the restore
	owner := &pgHost{id: h.id, root: h.root, url: roles.at(roles.owner, bak)}
	if r := owner.must(t, 0, "project", "--accept-rollback"); !strings.Contains(r.Stdout, "rollback accepted") {
		t.Errorf("the owner's accept: %s", r.Stdout)
	}
	restored.must(t, 0, "acquire", "x")
}

// TestStatusOfALostHoldingAfterTheRollbackIsAccepted: on a host whose pin
// saw the ledger further on, status --json says so in behind_pin (the
// pin's file, the head it pins, the head found); once project
// --accept-rollback has gone on from that state it carries none, and the
// lost holding's lock file, which the ledger no longer holds, is not
// called another tool's alone: in the ledger's own layout, it may be the
// ledger's own holder from the events the rollback gave up.
func TestStatusOfALostHoldingAfterTheRollbackIsAccepted(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	clitest.Must(t, 0, root, "run", "a", "--", "true")
	restore := restoreLedgerFile(t, root)
	clitest.Must(t, 0, root, "acquire", "deploy")
	restore()
	var before struct {
		State     string `json:"state"`
		Foreign   bool   `json:"foreign"`
		BehindPin *struct {
			Pin           string
			Pinned, Found struct{ Seq int64 }
			Reason        string
		} `json:"behind_pin"`
	}
	r := clitest.Must(t, 0, root, "status", "deploy", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &before); err != nil {
		t.Fatalf("status --json: %v: %s", err, r.Stdout)
	}
	if b := before.BehindPin; b == nil || b.Pin != filepath.Join(root, "ledger.pin") || b.Pinned.Seq <= b.Found.Seq ||
		!strings.Contains(b.Reason, "restored from a backup or rolled back") {
		t.Errorf("status --json of a ledger behind the root's pin: behind_pin %+v\n%s", b, r.Stdout)
	}
	// list --json says it of every lock, as status does.
	var status struct {
		BehindPin json.RawMessage `json:"behind_pin"`
	}
	var listed []struct {
		Name      string          `json:"lock_name"`
		BehindPin json.RawMessage `json:"behind_pin"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &status); err != nil {
		t.Fatal(err)
	}
	l := clitest.Must(t, 0, root, "list", "--json")
	if err := json.Unmarshal([]byte(l.Stdout), &listed); err != nil || len(listed) == 0 {
		t.Fatalf("list --json: %v: %s", err, l.Stdout)
	}
	for _, x := range listed {
		if !bytes.Equal(x.BehindPin, status.BehindPin) {
			t.Errorf("list --json of a ledger behind the root's pin: %s has behind_pin %s, want status's %s", x.Name, x.BehindPin, status.BehindPin)
		}
	}
	clitest.Must(t, 0, root, "project", "--accept-rollback")
	r = clitest.Must(t, 0, root, "status", "deploy", "--json")
	if strings.Contains(r.Stdout, "behind_pin") {
		t.Errorf("status --json after the rollback was accepted still says the ledger is behind: %s", r.Stdout)
	}
	if r := clitest.Must(t, 0, root, "list", "--json"); strings.Contains(r.Stdout, "behind_pin") {
		t.Errorf("list --json after the rollback was accepted still says the ledger is behind: %s", r.Stdout)
	}
	s := clitest.Must(t, 0, root, "status", "deploy").Stdout
	if !strings.Contains(s, "deploy: held") || strings.Contains(s, "written by another tool") || !strings.Contains(s, "the ledger's own holder from events it no longer has") {
		t.Errorf("status after the rollback was accepted, of the lost holding's lock file: %s", s)
	}
}

// TestARunClosingAfterAnotherWriterKeepsTheNewerPin: a run opens with the
// root's pin at one head; while it holds its lock another process on the
// same root writes and exits, advancing the pin past the run's; then the
// database is restored to a backup taken before that write. The run's
// exit finds a head that extends the pin it opened with, but not the pin
// now on disk: it must leave that pin, so that the host's next write
// refuses the restored ledger (another history at the seq the other
// process wrote). Before, the run compared the head only with the pin it
// had read at open and wrote it over the newer one: the restore was
// accepted without a word, and the other process's acquire was lost.
func TestARunClosingAfterAnotherWriterKeepsTheNewerPin(t *testing.T) {
	t.Parallel()
	c := pgtest.Get(t)
	name := pgtest.CreateDatabase(t)
	h := newPGHost(t, "web", c.SocketURL(name))
	clitest.Unsigned(t, h.root) // only the pin can notice
	rid := strings.TrimSpace(h.must(t, 0, "acquire", "a", "--pid", "1").Stdout)
	h.must(t, 0, "release", "a", "--request-id", rid)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := filepath.Join(t.TempDir(), "done")
	run := h.command(ctx, "run", "deploy", "--ttl", "30s", "--", "sh", "-c", `until [ -e "$1" ]; do sleep 0.05; done`, "sh", done)
	var stderr testlog.Buffer
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	awaitCondition(t, "the run holding its lock", func() bool { return strings.Contains(stderr.String(), "acquired") })
	restore := dumpDatabase(t, c, name)
	h.must(t, 0, "acquire", "x", "--pid", "1") // the pin moves past the run's
	pinned, err := os.ReadFile(filepath.Join(h.root, "ledger.pin"))
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err = run.Wait()
	t.Logf("the run: %v\n%s", err, stderr.String())
	if now, err := os.ReadFile(filepath.Join(h.root, "ledger.pin")); err != nil || string(now) != string(pinned) {
		t.Errorf("the pin after the run: %q (%v), want it left at %q", now, err, pinned)
	}
	// Refused: another history at seq 4 once the run's release is there,
	// an older state had it failed.
	if r := h.run(t, "acquire", "y", "--pid", "1"); r.Code != 1 || !strings.Contains(r.Stderr, "but this host has written to") {
		t.Errorf("the next write after the run: exit %d, want 1 naming the restore\n%s", r.Code, r.Stderr)
	}
}

// dumpDatabase dumps the database name of c now (pg_dump), and returns
// what restores it as the dump has it: the database dropped, made again
// and filled from the dump (pg_restore), as an operator restores a backup.
func dumpDatabase(t *testing.T, c *pgtest.Cluster, name string) (restore func()) {
	t.Helper()
	pg := func(tool string, args ...string) {
		t.Helper()
		args = append([]string{"-h", c.SocketDir, "-p", strconv.Itoa(c.Port), "-U", "postgres"}, args...)
		if out, err := exec.Command(filepath.Join(c.BinDir, tool), args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", tool, err, out)
		}
	}
	dump := filepath.Join(t.TempDir(), "dump")
	pg("pg_dump", "-Fc", "-f", dump, name)
	return func() {
		t.Helper()
		for _, q := range []string{"DROP DATABASE " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)", "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()} {
			if err := c.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		pg("pg_restore", "-d", name, dump)
	}
}

// TestAnAcceptRollbackKilledWithItsHeadAsideLosesNoHead: project
// --accept-rollback killed (SIGKILL) once it has moved the signed head kept
// of the ledger aside, before its write (held up here by the writer mutex
// taken by hand), leaves the head aside: the next look at the heads puts it
// back, since nothing recorded the rollback, so the restore is still
// noticed; the next project --accept-rollback then goes on, and leaves
// nothing aside.
func TestAnAcceptRollbackKilledWithItsHeadAsideLosesNoHead(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "a").Stdout)
	clitest.Must(t, 0, root, "release", "a", "--request-id", rid)
	restore := restoreLedgerFile(t, root)
	clitest.Must(t, 0, root, "acquire", "deploy")
	restore()
	head := keptHead(root, ledgerID(t, root))
	aside := filepath.Join(filepath.Dir(head), "."+filepath.Base(head)+".dropped")
	kept, err := os.ReadFile(head)
	if err != nil {
		t.Fatal(err)
	}

	release := holdWriter(t, root)
	cmd := clitest.Command(context.Background(), root, "project", "--accept-rollback")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Aside: the head is out of its place (the aside is linked first).
	awaitFile(t, aside)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(head); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still in place 30 s after its aside appeared", head)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("project --accept-rollback ended on its own before it was killed")
	}
	release()

	if r := clitest.Must(t, 1, root, "verify"); !strings.Contains(r.Stdout, "restored from a backup") && !strings.Contains(r.Stderr, "restored from a backup") {
		t.Errorf("verify after the killed run does not notice the restore: %s%s", r.Stdout, r.Stderr)
	}
	if b, err := os.ReadFile(head); err != nil || !bytes.Equal(b, kept) {
		t.Errorf("the head the killed run left aside was not put back: %v", err)
	}
	clitest.Must(t, 0, root, "project", "--accept-rollback")
	clitest.Must(t, 0, root, "acquire", "x")
	clitest.Must(t, 0, root, "verify")
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(head), ".*.dropped")); len(left) > 0 {
		t.Errorf("heads left aside for good: %v", left)
	}
}
