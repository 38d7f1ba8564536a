package migrations

import (
	"context"
	"database/sql"
	"fmt"
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
// rebuilds a table as it stands (a copy in a TEMP table, the table dropped
// and created again, the copy put back and dropped), or adds functions that
// only writers call (a writer migrates first): a reader that skips them
// finds every table, column, trigger and function it reads. That a rebuilt
// table keeps its columns and rows is TestReadableFromSeesTheSameTables's.
func TestReadableFromIsFollowedByIndexesOnly(t *testing.T) {
	rebuild := regexp.MustCompile(`^(CREATE TEMP TABLE \w+_copy AS SELECT \* FROM \w+|DROP TABLE (temp\.\w+_copy|\w+)|CREATE TABLE \w+ \(.*\) WITHOUT ROWID|INSERT INTO \w+ SELECT \* FROM temp\.\w+_copy)$`)
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
					(s.glob != SQLite.glob || !rebuild.MatchString(stmt)) && !writersOnly(stmt) {
					t.Errorf("%s changes more than an index (%q): a reader of the version before it would miss it; make ReadableFrom %d", m.Name, stmt, m.Version)
				}
			}
		}
	}
}

// A reader of ReadableFrom's version finds, after every later migration,
// the same tables with the same columns, the same triggers and the same
// rows: a rebuilt table (TestReadableFromIsFollowedByIndexesOnly) keeps
// what it held.
func TestReadableFromSeesTheSameTables(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "m.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := SQLite.All()
	if err != nil {
		t.Fatal(err)
	}
	apply := func(from, to int) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, m := range all {
			if m.Version > from && m.Version <= to {
				if err := applyIn(ctx, tx, m, func() string { return "2026-01-01T00:00:00Z" }); err != nil {
					t.Fatalf("%s: %v", m.Name, err)
				}
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	readable := SQLite.ReadableFrom()
	apply(0, readable)
	for _, q := range []string{
		`INSERT INTO locks (lock_name, request_id, host_id, fencing_token, updated_seq, file, targets) VALUES ('a', 'r1', 'h', 1, 2, x'7b7d', '[]'), ('b', 'r2', 'h', 3, 3, x'', '[]')`,
		`INSERT INTO lock_holders (lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id, created_at,
			heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq, pid_ns, exclusive, targets)
			VALUES ('a', 'r1', 'x', '', '', 'h', 7, '1', 'b', 't', 't', 60, '{}', 1, 1, 2, NULL, 1, '[]'),
			('c', 'r3', 'y', 'i', 'v', 'h', 8, '2', 'b', 't', 't', 60, '{}', 4, 0, 4, 5, 0, '[]')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// seen is what a reader finds: each table's columns and rows, and the triggers.
	seen := func() map[string]string {
		out := map[string]string{}
		tables, err := db.QueryContext(ctx, `SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE type IN ('table', 'trigger') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name <> 'schema_migrations'`)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for tables.Next() {
			var typ, name, ddl string
			if err := tables.Scan(&typ, &name, &ddl); err != nil {
				t.Fatal(err)
			}
			if typ == "trigger" {
				out["trigger "+name] = ddl
			} else {
				names = append(names, name)
			}
		}
		if err := tables.Close(); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			var cols string
			// A key column is counted NOT NULL: SQLite lets a rowid table's
			// TEXT key hold NULL, which no lockledger writes.
			if err := db.QueryRowContext(ctx, `SELECT group_concat(name || ' ' || type || ' ' || ("notnull" OR pk > 0) || ' ' || coalesce(dflt_value, '-') || ' ' || pk, ', ')
				FROM pragma_table_xinfo($1)`, name).Scan(&cols); err != nil {
				t.Fatal(err)
			}
			rows, err := db.QueryContext(ctx, `SELECT * FROM `+name+` ORDER BY 1, 2`)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := rows.Columns()
			var got []string
			for rows.Next() {
				vals := make([]any, len(n))
				ptrs := make([]any, len(n))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%q", vals))
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			out["table "+name] = cols + " / " + strings.Join(got, "|")
		}
		return out
	}
	before := seen()
	apply(readable, SQLite.Latest())
	after := seen()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s after the migrations past %d:\n%s\nwas\n%s", k, readable, after[k], v)
		}
	}
	if len(after) != len(before) {
		t.Errorf("after the migrations past %d: %d tables and triggers, %d before", readable, len(after), len(before))
	}
}

// dollarQuoted is a function's body: its statements are the function's.
var dollarQuoted = regexp.MustCompile(`(?s)\$\$.*?\$\$`)

// writersOnly: stmt creates one of the functions a writer calls for a
// decision (store/decision.go), which no reader calls and no trigger runs.
func writersOnly(stmt string) bool {
	for _, fn := range []string{"lockledger_read_decision(", "lockledger_write_decision("} {
		if strings.HasPrefix(stmt, "CREATE FUNCTION "+fn) || strings.HasPrefix(stmt, "CREATE OR REPLACE FUNCTION "+fn) {
			return true
		}
	}
	return false
}
