package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the reference schema is built in memory

	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/replay"
)

// storageLines is how many of SQLite's messages a storage problem quotes;
// the rest are counted.
const storageLines = 5

// CheckStorage adds to rep what is wrong with the SQLite database read through
// q: SQLite's quick_check (every page read, every b-tree's structure), or
// with full its integrity_check (also every index against its table, which
// reads each row once more per index); and every trigger that differs from
// the ones the migrations create, or that they do not create. A check that
// cannot run is itself a storage problem: only a cancelled ctx is returned.
func CheckStorage(ctx context.Context, q replay.Querier, full bool, rep *replay.Report) error {
	if err := checkDatabaseFile(ctx, q, full, rep); err != nil {
		return err
	}
	return checkTriggers(ctx, q, rep)
}

func checkDatabaseFile(ctx context.Context, q replay.Querier, full bool, rep *replay.Report) error {
	// At most 100 messages: a destroyed file yields thousands.
	name, query := "quick_check", `PRAGMA quick_check(100)`
	if full {
		name, query = "integrity_check", `PRAGMA integrity_check(100)`
	}
	var lines []string
	rowsRead := 0
	err := func() error {
		rows, err := q.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return err
			}
			rowsRead++
			// A row may hold several lines; the first names the schema
			// ("*** in database main ***"), which says nothing here.
			for _, l := range strings.Split(s, "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "*** ") {
					lines = append(lines, l)
				}
			}
		}
		return rows.Err()
	}()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && len(lines) == 0:
		rep.Add(replay.Problem{Kind: replay.KindStorage, Detail: fmt.Sprintf("SQLite's %s could not run: %v", name, err)})
	case err != nil:
		// A page it cannot even parse ends the check after its message.
		rep.Add(replay.Problem{Kind: replay.KindStorage, Detail: fmt.Sprintf("SQLite's %s says the database is damaged: %s; then it stopped: %v",
			name, quoteLines(lines, false), err)})
	case len(lines) != 1 || lines[0] != "ok":
		rep.Add(replay.Problem{Kind: replay.KindStorage, Detail: fmt.Sprintf("SQLite's %s says the database is damaged: %s",
			name, quoteLines(lines, rowsRead >= 100))})
	}
	return nil
}

// quoteLines quotes the first of SQLite's messages; capped is whether the
// check stopped at its limit (there may be more than it said).
func quoteLines(lines []string, capped bool) string {
	if len(lines) == 0 {
		return "(no answer)"
	}
	shown := lines[:min(len(lines), storageLines)]
	s := strings.Join(shown, "; ")
	if n := len(lines) - len(shown); n > 0 {
		s += fmt.Sprintf("; and %d more", n)
	}
	if capped {
		s += " (the check stops after 100 messages)"
	}
	return s
}

// schemaTrigger is a trigger as sqlite_master keeps it: SQLite stores the
// CREATE TRIGGER statement's text as written.
type schemaTrigger struct {
	table string
	sql   string
}

// referenceTriggers are the triggers the embedded migrations create,
// read from a database in memory they were applied to: the reference is
// SQLite's own text of each, whatever the migration files look like.
var referenceTriggers = sync.OnceValues(func() (map[string]schemaTrigger, error) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:lockledger-reference?mode=memory")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: the database lives as long as it does
	if err := migrations.Apply(ctx, db, func() string { return "" }); err != nil {
		return nil, fmt.Errorf("storage check: the migrations' reference schema: %w", err)
	}
	return loadTriggers(ctx, db)
})

func loadTriggers(ctx context.Context, q replay.Querier) (map[string]schemaTrigger, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, tbl_name, coalesce(sql, '') FROM sqlite_master WHERE type = 'trigger'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]schemaTrigger{}
	for rows.Next() {
		var name string
		var t schemaTrigger
		if err := rows.Scan(&name, &t.table, &t.sql); err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, rows.Err()
}

// checkTriggers compares the database's triggers with the migrations':
// without them, an UPDATE, DELETE or REPLACE of events goes through
// silently, and only the chain would show it afterwards.
func checkTriggers(ctx context.Context, q replay.Querier, rep *replay.Report) error {
	want, err := referenceTriggers()
	if err != nil {
		return err
	}
	got, err := loadTriggers(ctx, q)
	if err != nil {
		return rep.ReadFailure(ctx, "the schema's triggers", err)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		g, ok := got[name]
		switch {
		case !ok:
			rep.Add(replay.Problem{Kind: replay.KindTrigger, Detail: fmt.Sprintf(
				"%s on table %s is missing (the migrations create it: %s)", name, w.table, firstLine(w.sql))})
		case g != w:
			rep.Add(replay.Problem{Kind: replay.KindTrigger, Detail: fmt.Sprintf(
				"%s on table %s is not the one the migrations create: it reads %q", name, g.table, termtext.Clip(g.sql, 300))})
		}
		delete(got, name)
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		rep.Add(replay.Problem{Kind: replay.KindTrigger, Detail: fmt.Sprintf(
			"%s on table %s was not created by the migrations: it reads %q", name, got[name].table, termtext.Clip(got[name].sql, 300))})
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}
