package migrations

import (
	"context"
	"database/sql"
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// Tables must name exactly the tables that applying every migration leaves.
func TestTablesNamesEveryTableTheMigrationsCreate(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "m.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Apply(ctx, db, func() string { return "2026-01-01T00:00:00Z" }); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	applied := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		applied[n] = true
	}
	named, err := Tables()
	if err != nil {
		t.Fatal(err)
	}
	for n := range applied {
		if !named[n] {
			t.Errorf("table %s exists after the migrations but Tables() does not name it", n)
		}
	}
	if len(applied) < 4 {
		t.Fatalf("only %v after the migrations", applied)
	}
}

// What a caller does to the tables or migrations it got does not change
// what the next caller gets: they are read once and handed out as copies.
func TestCallersGetTheirOwnCopies(t *testing.T) {
	for _, s := range []Set{SQLite, Postgres} {
		tables, err := s.Tables()
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.All()
		if err != nil || len(all) == 0 {
			t.Fatalf("%s: %d migrations, %v", s.glob, len(all), err)
		}
		latest := s.Latest()
		delete(tables, "events")
		tables["intruder"] = true
		all[len(all)-1].Version, all[0].SQL = 0, "DROP TABLE events"
		again, _ := s.Tables()
		allAgain, _ := s.All()
		if !again["events"] || again["intruder"] || s.Latest() != latest || allAgain[0].SQL == "DROP TABLE events" {
			t.Fatalf("%s: a caller's change leaked to the next caller: tables %v, latest %d (was %d)", s.glob, again, s.Latest(), latest)
		}
	}
}

// The tables and the latest version, found without keeping the files'
// SQL, are what the whole files say: every CREATE TABLE of every
// migration (found here by a regular expression, another reading of the
// same text), and the last migration's version.
func TestTablesAndLatestAgreeWithTheWholeFiles(t *testing.T) {
	// Each set twice: as read once for every caller, and read afresh.
	create := regexp.MustCompile("(?i)\\bCREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?[\"`\\[]?([A-Za-z_][A-Za-z0-9_]*)")
	for _, s := range []Set{SQLite, Postgres, {glob: SQLite.glob}, {glob: Postgres.glob}} {
		all, err := s.All()
		if err != nil || len(all) == 0 {
			t.Fatalf("%s: %d migrations, %v", s.glob, len(all), err)
		}
		if got, want := s.Latest(), all[len(all)-1].Version; got != want {
			t.Errorf("%s: Latest() = %d, the last migration is %d", s.glob, got, want)
		}
		want := map[string]bool{"schema_migrations": true}
		for _, m := range all {
			for _, c := range create.FindAllStringSubmatch(m.SQL, -1) {
				want[strings.ToLower(c[1])] = true
			}
		}
		got, err := s.Tables()
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: Tables() = %v, the files create %v", s.glob, got, want)
		}
		if len(want) < 5 {
			t.Errorf("%s: only %v", s.glob, want)
		}
	}
}

// Every migration after a set's ReadableFrom only adds indexes, or
// functions that only writers call (a writer migrates first): a reader
// that skips them finds every table, column, trigger and function it reads.
func TestReadableFromIsFollowedByIndexesOnly(t *testing.T) {
	for _, s := range []Set{SQLite, Postgres} {
		all, err := s.All()
		if err != nil {
			t.Fatal(err)
		}
		if r := s.ReadableFrom(); r < 1 || r > s.Latest() {
			t.Fatalf("%s: ReadableFrom %d is not a version of the set (1-%d)", s.glob, r, s.Latest())
		}
		for _, m := range all {
			if m.Version <= s.ReadableFrom() {
				continue
			}
			var code []string
			for _, line := range strings.Split(dollarQuoted.ReplaceAllString(m.SQL, "$$$$$$$$"), "\n") {
				if line, _, _ = strings.Cut(line, "--"); strings.TrimSpace(line) != "" {
					code = append(code, line)
				}
			}
			for _, stmt := range strings.Split(strings.Join(code, "\n"), ";") {
				stmt = strings.Join(strings.Fields(stmt), " ")
				if stmt != "" && !strings.HasPrefix(stmt, "CREATE INDEX ") && stmt != "SET CONSTRAINTS ALL IMMEDIATE" &&
					!writersOnly(stmt) {
					t.Errorf("%s changes more than an index (%q): a reader of the version before it would miss it; make ReadableFrom %d", m.Name, stmt, m.Version)
				}
			}
		}
	}
}

// dollarQuoted is a function's body: its statements are the function's.
var dollarQuoted = regexp.MustCompile(`(?s)\$\$.*?\$\$`)

// writersOnly: stmt creates one of the functions a writer calls for a
// decision (store/decision.go), which no reader calls and no trigger runs.
func writersOnly(stmt string) bool {
	return strings.HasPrefix(stmt, "CREATE FUNCTION lockledger_read_decision(") ||
		strings.HasPrefix(stmt, "CREATE FUNCTION lockledger_write_decision(")
}
