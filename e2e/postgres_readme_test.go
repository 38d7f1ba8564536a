package e2e

import (
	"context"
	"fmt"
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

// readmeSection is the text of the PostgreSQL page (docs/postgresql.md)
// from the heading start up to the first line that begins with end.
func readmeSection(t *testing.T, start, end string) string {
	t.Helper()
	page, err := os.ReadFile("../docs/postgresql.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("docs/postgresql.md has no %q", start)
	}
	s = s[i:]
	if j := strings.Index(s, "\n"+end); j >= 0 {
		s = s[:j]
	}
	return s
}

// shellScript turns the ```sh blocks of a section (```sh pg among them)
// into one script: each "$ " line a command (a here-document's lines with
// it), comments dropped, and the other lines returned as the output the
// commands print.
func shellScript(section string) (script string, outputs []string) {
	var b strings.Builder
	for _, block := range strings.Split(section, "```sh")[1:] {
		block = block[strings.Index(block, "\n")+1:]
		block = block[:strings.Index(block, "```")]
		lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
		for i := 0; i < len(lines); i++ {
			l := lines[i]
			switch {
			case strings.HasPrefix(l, "$ "):
				b.WriteString(l[2:] + "\n")
				if strings.Contains(l, "<<'SQL'") {
					for i++; i < len(lines); i++ {
						b.WriteString(lines[i] + "\n")
						if lines[i] == "SQL" {
							break
						}
					}
				}
			case strings.HasPrefix(l, "#"):
			default:
				outputs = append(outputs, l)
			}
		}
	}
	return b.String(), outputs
}

// TestPostgresREADMESetUpAsWritten runs the README's PostgreSQL set-up and
// its examples as written, through bash and psql against the throwaway
// cluster, with only the server's address changed (and, for the import,
// the source's path; ./deploy.sh is a script that says "deployed"): the
// superuser makes the owner, its database and the roles; the owner's init
// makes the tables and its grants name them; a writer's runs on two hosts
// take turns; the auditor verifies (unrecorded, naming the database) and
// is refused a lock without a word about lock files; a SQLite ledger is
// imported into a database set up the same way.
func TestPostgresREADMESetUpAsWritten(t *testing.T) {
	t.Parallel()
	clitest.NeedBinary(t, "psql")
	c := pgtest.Get(t)
	section := readmeSection(t, "# Many hosts: PostgreSQL", "**How time and liveness")
	script, outputs := shellScript(section)
	addr := regexp.MustCompile(`postgres://(\w+)@db\.internal/(\w+)(\?sslmode=verify-full)?`)
	if n := len(addr.FindAllString(script, -1)); n < 5 {
		t.Fatalf("README's PostgreSQL section names the database %d times; its blocks:\n%s", n, script)
	}
	server := fmt.Sprintf("postgres://${1}@%s/${2}", c.TCPAddr())
	script = addr.ReplaceAllString(script, server)
	t.Cleanup(func() {
		for _, q := range []string{"DROP DATABASE IF EXISTS locks WITH (FORCE)", "DROP DATABASE IF EXISTS locks_import WITH (FORCE)",
			"DROP ROLE IF EXISTS lockledger_writer", "DROP ROLE IF EXISTS lockledger_auditor", "DROP ROLE IF EXISTS lockledger"} {
			if err := c.Exec(q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})

	work, home, bin := t.TempDir(), t.TempDir(), t.TempDir()
	wrapper := "#!/bin/sh\nexec " + strconv.Quote(clitest.Bin()) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "lockledger"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "deploy.sh"), []byte("#!/bin/sh\necho deployed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eu", "-o", "pipefail", "-x", "-c", script)
	cmd.Dir = work
	cmd.Env = append(defaultRootEnv(home), "PATH="+bin+":"+os.Getenv("PATH"))
	r := clitest.Exec(t, cmd)
	if r.Code != 0 {
		t.Fatalf("the README's PostgreSQL section, run as written: exit %d\nscript:\n%s\nstdout: %s\nstderr: %s", r.Code, script, r.Stdout, r.Stderr)
	}
	for _, o := range outputs {
		if !strings.Contains(r.Stdout, o+"\n") {
			t.Errorf("the README shows %q; the commands printed:\n%s", o, r.Stdout)
		}
	}
	if strings.Count(r.Stdout, "deployed\n") != 2 {
		t.Errorf("deploy.sh did not run once per host:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stdout, "init: created ledger") {
		t.Errorf("init did not say it created the ledger:\n%s", r.Stdout)
	}
	// The auditor's part: after its export LOCKLEDGER_DATABASE_URL.
	_, auditor, ok := strings.Cut(r.Stderr, "lockledger_auditor@")
	if !ok {
		t.Fatalf("no auditor commands in the trace:\n%s", r.Stderr)
	}
	if !strings.Contains(auditor, "not recorded") || !strings.Contains(auditor, "database=") || strings.Contains(auditor, "root=") {
		t.Errorf("the auditor's unrecorded verify does not name the database alone:\n%s", auditor)
	}
	if strings.Contains(auditor, "lock file") {
		t.Errorf("the auditor's refused acquire speaks of lock files:\n%s", auditor)
	}
	// An auditor that may take the writer lock (a grant too many) still
	// cannot append: its refused acquire leaves no lock file and says
	// nothing about one.
	locks := openSQL(t, c.SocketURL("locks"))
	if _, err := locks.Exec("GRANT UPDATE ON writer_lock TO lockledger_auditor"); err != nil {
		t.Fatal(err)
	}
	asAuditor := strings.Replace(c.SocketURL("locks"), "postgres://"+pgtest.Superuser+"@", "postgres://lockledger_auditor@", 1)
	r = clitest.RunWith(t, "", append(defaultRootEnv(home), "LOCKLEDGER_DATABASE_URL="+asAuditor), "", "acquire", "audited")
	if r.Code != 1 || strings.Contains(r.Stderr, "lock file") {
		t.Errorf("an auditor's refused acquire: exit %d, want 1 and no word of lock files\nstderr: %s", r.Code, r.Stderr)
	}
	// Moving a ledger from SQLite, as written, into a database set up as
	// above (the owner's, after its init), with the source at the path
	// the README names replaced by this test's.
	src := filepath.Join(t.TempDir(), "var-lib-lockledger")
	clitest.Must(t, 0, src, "acquire", "moved", "--pid", strconv.Itoa(os.Getpid()))
	clitest.Must(t, 0, src, "release", "moved", "--force", "--yes", "--reason", "moving the ledger")
	if err := c.Exec("CREATE DATABASE locks_import OWNER lockledger"); err != nil {
		t.Fatal(err)
	}
	move, _ := shellScript(readmeSection(t, "**Moving a ledger from SQLite.**", "The ledger keeps its id"))
	if !strings.Contains(move, " import --from /var/lib/lockledger") {
		t.Fatalf("README's import example: %q", move)
	}
	move = addr.ReplaceAllString(move, server+"_import")
	move = strings.ReplaceAll(move, "/var/lib/lockledger", src)
	owner := "postgres://lockledger@" + c.TCPAddr() + "/locks_import"
	cmd = exec.CommandContext(ctx, "bash", "-eu", "-o", "pipefail", "-x", "-c",
		"lockledger --root "+t.TempDir()+" --database '"+owner+"' init\n"+move)
	cmd.Dir = work
	cmd.Env = append(defaultRootEnv(home), "PATH="+bin+":"+os.Getenv("PATH"))
	if r = clitest.Exec(t, cmd); r.Code != 0 || !strings.Contains(r.Stdout, "verify: OK") || !strings.Contains(r.Stdout, "events       2") {
		t.Errorf("the README's import, run as written: exit %d\nscript:\n%s\nstdout: %s\nstderr: %s", r.Code, move, r.Stdout, r.Stderr)
	}
	if entries, err := os.ReadDir(filepath.Join(home, ".local", "state", "lockledger", "locks")); err == nil {
		for _, e := range entries {
			t.Errorf("a lock file is left in the writers' root: %s", e.Name())
		}
	}
}

// On an empty database the reads say there is no ledger, naming the
// database (exit 6) and creating no table; init as the owner creates the
// tables once, and again says so and changes nothing.
func TestPostgresInitAndNoLedger(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	h := newPGHost(t, "init-host", url)
	for _, args := range [][]string{{"status", "x"}, {"list"}, {"verify"}, {"timeline"}} {
		r := h.must(t, 6, args...)
		if !strings.Contains(r.Stderr, "no ledger at postgres database ") || strings.Contains(r.Stderr, h.root) {
			t.Errorf("%v on an empty database: %s", args, r.Stderr)
		}
	}
	db := openSQL(t, url)
	tables := func() string { return publicTables(t, url) }
	if n := tables(); n != "0" {
		t.Fatalf("the reads created %s tables", n)
	}
	o := jsonOut(t, h.must(t, 0, "init", "--json"))
	if o["status"] != "created" || !strings.HasPrefix(o["source"].(string), "postgres database ") {
		t.Fatalf("init --json: %v", o)
	}
	n := tables()
	if again := jsonOut(t, h.must(t, 0, "init", "--json")); again["status"] != "exists" || again["ledger_id"] != o["ledger_id"] {
		t.Errorf("init again: %v", again)
	}
	if tables() != n || scalar(t, db, `SELECT count(*)::text FROM events`) != "0" {
		t.Errorf("init on a ledger changed the database")
	}
	h.must(t, 0, "status", "x")
}
