package sqlite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
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
func CheckStorage(ctx context.Context, q store.Querier, full bool, rep *verify.Report) error {
	if err := checkDatabaseFile(ctx, q, full, rep); err != nil {
		return err
	}
	return checkTriggers(ctx, q, rep)
}

func checkDatabaseFile(ctx context.Context, q store.Querier, full bool, rep *verify.Report) error {
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
		rep.Add(verify.Problem{Kind: verify.KindStorage, Detail: fmt.Sprintf("SQLite's %s could not run: %v", name, err)})
	case err != nil:
		// A page it cannot even parse ends the check after its message.
		rep.Add(verify.Problem{Kind: verify.KindStorage, Detail: fmt.Sprintf("SQLite's %s says the database is damaged: %s; then it stopped: %v",
			name, quoteLines(lines, false), err)})
	case len(lines) != 1 || lines[0] != "ok":
		rep.Add(verify.Problem{Kind: verify.KindStorage, Detail: fmt.Sprintf("SQLite's %s says the database is damaged: %s",
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

func loadTriggers(ctx context.Context, q store.Querier) (map[string]schemaTrigger, error) {
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

// checkTriggers compares the database's triggers with the migrations'
// (generatedTriggers): without them, an UPDATE, DELETE or REPLACE of
// events goes through silently, and only the chain would show it
// afterwards. The reference is SQLite's own text of each, read from a
// database in memory the migrations were applied to when the table was
// generated: applying them here cost every verify a fifth of its CPU.
func checkTriggers(ctx context.Context, q store.Querier, rep *verify.Report) error {
	want := generatedTriggers
	got, err := loadTriggers(ctx, q)
	if err != nil {
		return rep.ReadFailure(ctx, "the schema's triggers", err)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		g, ok := got[name]
		switch {
		case !ok:
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf(
				"%s on table %s is missing (the migrations create it: %s)", name, w.table, firstLine(w.sql))})
		case g != w:
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf(
				"%s on table %s is not the one the migrations create: it reads %q", name, g.table, termtext.Clip(g.sql, 300))})
		}
		delete(got, name)
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf(
			"%s on table %s was not created by the migrations: it reads %q", name, got[name].table, termtext.Clip(got[name].sql, 300))})
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}
