package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// CheckStorage adds to rep every trigger the migrations create that is missing
// from the schema q reads, disabled (ALTER TABLE ... DISABLE TRIGGER, or
// session_replication_role = replica for origin-enabled ones), or defined
// otherwise than the migrations define it; every function those triggers
// call whose definition is not the migrations' (CREATE OR REPLACE
// FUNCTION, ALTER FUNCTION); every trigger they do not create; and every
// other function they define (a decision's calls: store/decision.go) that
// is defined otherwise, or missing from a schema migrated to the version
// that defines it (a reader reads an older schema without them; one
// migrated before the version that last defines it holds an older
// definition, not checked). The
// migrations' are generatedTriggers and generatedFunctions, as PostgreSQL
// prints them.
// PostgreSQL checks its own pages: there is no file to check. Only a
// cancelled ctx is returned.
func CheckStorage(ctx context.Context, q store.Querier, rep *verify.Report) error {
	got, err := loadTriggers(ctx, q)
	if err != nil {
		return rep.ReadFailure(ctx, "the schema's triggers", err)
	}
	badFunc := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		g := got[name]
		want, ok := generatedTriggers[name]
		switch {
		case !ok:
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf("%s on table %s was not created by the migrations", name, g.table)})
		case oneLine(g.def) != oneLine(want.def):
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf(
				"%s on table %s is not the one the migrations create: it reads %q", name, g.table, termtext.Clip(oneLine(g.def), 300))})
		case oneLine(g.fdef) != oneLine(want.fdef) && !badFunc[g.fn]:
			badFunc[g.fn] = true
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf(
				"function %s, which trigger %s on table %s calls, is not the one the migrations define: it reads %q",
				g.fn, name, g.table, termtext.Clip(oneLine(g.fdef), 300))})
		}
	}
	funcs, err := loadFunctions(ctx, q)
	if err != nil {
		return rep.ReadFailure(ctx, "the schema's functions", err)
	}
	version, err := migrations.Postgres.Current(ctx, q)
	if err != nil {
		return rep.ReadFailure(ctx, "the schema's version", err)
	}
	for _, name := range slices.Sorted(maps.Keys(generatedFunctions)) {
		switch def, ok := funcs[name]; {
		case !ok && version >= definedIn(name):
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf("function %s is missing (the migrations define it)", name)})
		case ok && version >= lastDefinedIn(name) && oneLine(def) != oneLine(generatedFunctions[name]):
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf(
				"function %s is not the one the migrations define: it reads %q", name, termtext.Clip(oneLine(def), 300))})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(generatedTriggers)) {
		switch g, ok := got[name]; {
		case !ok:
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf("%s on table %s is missing (the migrations create it)", name, generatedTriggers[name].table)})
		case g.enabled == "D":
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf("%s on table %s is disabled", name, g.table)})
		}
	}
	return nil
}

// pgTrigger is a trigger as PostgreSQL prints it: its table, whether it
// is enabled (pg_trigger.tgenabled), its definition, and the function it
// calls with that function's definition.
type pgTrigger struct {
	name, table, enabled, def, fn, fdef string
}

// loadTriggers reads the schema's triggers, by name. The schema's own
// name is left out of the definitions, as the migrations write them.
func loadTriggers(ctx context.Context, q store.Querier) (map[string]pgTrigger, error) {
	all, err := store.QueryAll(ctx, q, func(rs *sql.Rows, t *pgTrigger) error {
		return rs.Scan(&t.name, &t.table, &t.enabled, &t.def, &t.fn, &t.fdef)
	}, `SELECT t.tgname, c.relname, t.tgenabled::text,
			replace(pg_catalog.pg_get_triggerdef(t.oid), ' ON ' || quote_ident(current_schema()) || '.', ' ON '),
			p.proname, replace(pg_catalog.pg_get_functiondef(p.oid), 'FUNCTION ' || quote_ident(current_schema()) || '.', 'FUNCTION ')
		FROM pg_catalog.pg_trigger t
		JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
		JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
		WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace`)
	m := map[string]pgTrigger{}
	for _, t := range all {
		m[t.name] = t
	}
	return m, err
}

// loadFunctions reads the definitions of the schema's functions that are
// not trigger functions, by name, the schema's own name left out as in
// loadTriggers.
func loadFunctions(ctx context.Context, q store.Querier) (map[string]string, error) {
	type fn struct{ name, def string }
	all, err := store.QueryAll(ctx, q, func(rs *sql.Rows, f *fn) error { return rs.Scan(&f.name, &f.def) },
		`SELECT p.proname, replace(pg_catalog.pg_get_functiondef(p.oid), 'FUNCTION ' || quote_ident(current_schema()) || '.', 'FUNCTION ')
		FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = current_schema()::regnamespace AND p.prokind = 'f'
			AND p.prorettype <> 'pg_catalog.trigger'::pg_catalog.regtype`)
	m := map[string]string{}
	for _, f := range all {
		m[f.name] = f.def
	}
	return m, err
}

// definedIn is the version of the migration that creates function name.
func definedIn(name string) int {
	all, _ := migrations.Postgres.All()
	for _, m := range all {
		if strings.Contains(m.SQL, "CREATE FUNCTION "+name+"(") {
			return m.Version
		}
	}
	return 0
}

// lastDefinedIn is the version of the last migration that defines
// function name (CREATE OR REPLACE FUNCTION after its CREATE FUNCTION): a
// schema older than it holds the definition of a version before, which a
// reader reads as it stands and generatedFunctions no longer holds.
func lastDefinedIn(name string) int {
	all, _ := migrations.Postgres.All()
	last := 0
	for _, m := range all {
		if strings.Contains(m.SQL, "CREATE FUNCTION "+name+"(") || strings.Contains(m.SQL, "CREATE OR REPLACE FUNCTION "+name+"(") {
			last = m.Version
		}
	}
	return last
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
