package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

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
// FUNCTION, ALTER FUNCTION); and every trigger they do not create.
// PostgreSQL checks its own pages: there is no file to check. Only a
// cancelled ctx, or migrations that cannot be read, is returned.
func CheckStorage(ctx context.Context, q store.Querier, rep *verify.Report) error {
	ref, err := pgReference()
	if err != nil {
		return err
	}
	// The schema's own name is left out of the definitions, as the
	// migrations write them.
	rows, err := q.QueryContext(ctx, `SELECT t.tgname, c.relname, t.tgenabled::text,
			replace(pg_catalog.pg_get_triggerdef(t.oid), ' ON ' || quote_ident(current_schema()) || '.', ' ON '),
			p.proname, replace(pg_catalog.pg_get_functiondef(p.oid), 'FUNCTION ' || quote_ident(current_schema()) || '.', 'FUNCTION ')
		FROM pg_catalog.pg_trigger t
		JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
		JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
		WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
		ORDER BY t.tgname`)
	if err != nil {
		return rep.ReadFailure(ctx, "the schema's triggers", err)
	}
	defer rows.Close()
	got := map[string]string{}
	badFunc := map[string]bool{}
	for rows.Next() {
		var name, table, enabled, tdef, fname, fdef string
		if err := rows.Scan(&name, &table, &enabled, &tdef, &fname, &fdef); err != nil {
			return rep.ReadFailure(ctx, "the schema's triggers", err)
		}
		got[name] = enabled
		want, ok := ref.triggers[name]
		if !ok {
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf("%s on table %s was not created by the migrations", name, table)})
			continue
		}
		if normalise(tdef) != want.def {
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf(
				"%s on table %s is not the one the migrations create: it reads %q", name, table, termtext.Clip(oneLine(tdef), 300))})
			continue
		}
		if wantDef, ok := ref.functions[fname]; ok && normaliseFunction(fdef) != wantDef && !badFunc[fname] {
			badFunc[fname] = true
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf(
				"function %s, which trigger %s on table %s calls, is not the one the migrations define: it reads %q",
				fname, name, table, termtext.Clip(oneLine(fdef), 300))})
		}
	}
	if err := rows.Err(); err != nil {
		return rep.ReadFailure(ctx, "the schema's triggers", err)
	}
	for _, name := range slices.Sorted(maps.Keys(ref.triggers)) {
		switch e, ok := got[name]; {
		case !ok:
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf("%s on table %s is missing (the migrations create it)", name, ref.triggers[name].table)})
		case e == "D":
			rep.Add(verify.Problem{Kind: verify.KindTrigger, Detail: fmt.Sprintf("%s on table %s is disabled", name, ref.triggers[name].table)})
		}
	}
	return nil
}

type pgTrigger struct {
	table, def string
}

// pgRef is what the PostgreSQL migrations create: each trigger's table and
// normalised definition, and each function's normalised definition.
type pgRef struct {
	triggers  map[string]pgTrigger
	functions map[string]string
}

var pgReference = sync.OnceValues(func() (*pgRef, error) {
	all, err := migrations.Postgres.All()
	if err != nil {
		return nil, err
	}
	ref := &pgRef{triggers: map[string]pgTrigger{}, functions: map[string]string{}}
	for _, m := range all {
		for _, st := range statements(m.SQL) {
			f := strings.Fields(st)
			if len(f) > 3 && strings.EqualFold(f[1], "OR") && strings.EqualFold(f[2], "REPLACE") {
				f = append(f[:1:1], f[3:]...) // a later migration's definition replaces the earlier one
			}
			switch {
			case len(f) > 4 && strings.EqualFold(f[0], "CREATE") && strings.EqualFold(f[1], "FUNCTION"):
				name, _, _ := strings.Cut(f[2], "(")
				ref.functions[strings.ToLower(name)] = normaliseFunction(st)
			case len(f) > 4 && strings.EqualFold(f[0], "CREATE") && strings.EqualFold(f[1], "TRIGGER"),
				len(f) > 5 && strings.EqualFold(f[0], "CREATE") && strings.EqualFold(f[1], "CONSTRAINT") && strings.EqualFold(f[2], "TRIGGER"):
				i := slices.IndexFunc(f, func(s string) bool { return strings.EqualFold(s, "TRIGGER") })
				on := slices.IndexFunc(f, func(s string) bool { return strings.EqualFold(s, "ON") })
				if on < 0 || on+1 >= len(f) {
					return nil, fmt.Errorf("trigger check: %s: a trigger without a table: %.80s", m.Name, st)
				}
				ref.triggers[f[i+1]] = pgTrigger{table: f[on+1], def: normalise(st)}
			}
		}
	}
	return ref, nil
})

// statements splits SQL into its statements, without comments, keeping
// dollar-quoted bodies whole.
func statements(sql string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			cur.WriteByte('\n')
		case c == '$' && dollarTag(sql[i:]) != "":
			tag := dollarTag(sql[i:])
			shut := strings.Index(sql[i+len(tag):], tag)
			if shut < 0 {
				cur.WriteString(sql[i:])
				i = len(sql)
				continue
			}
			n := len(tag) + shut + len(tag)
			cur.WriteString(sql[i : i+n])
			i += n - 1
		case c == ';':
			if s := strings.TrimSpace(cur.String()); s != "" {
				out = append(out, s)
			}
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// dollarTag is the dollar quote s starts with ($$, $body$), or "".
func dollarTag(s string) string {
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '$':
			return s[:i+1]
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 1 && '0' <= c && c <= '9':
		default:
			return ""
		}
	}
	return ""
}

// normalise collapses white space and case, and drops a final semicolon.
func normalise(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.TrimSuffix(strings.TrimSpace(s), ";")), " "))
}

// normaliseFunction makes a function's definition as the migrations write
// it (CREATE FUNCTION name() ... AS $$body$$) and as pg_get_functiondef
// prints it (CREATE OR REPLACE FUNCTION name() ... AS $function$body$function$)
// the same text: the header's white space and case collapsed, the body's
// white space collapsed, whatever its dollar quote.
func normaliseFunction(def string) string {
	def = strings.TrimSuffix(strings.TrimSpace(def), ";")
	as := strings.Index(def, "$")
	if as < 0 {
		return normalise(def)
	}
	header, rest := def[:as], def[as:]
	end := strings.IndexByte(rest[1:], '$')
	if end < 0 {
		return normalise(def)
	}
	tag := rest[:end+2]
	body, tail, ok := strings.Cut(rest[len(tag):], tag)
	if !ok {
		return normalise(def)
	}
	header = normalise(header)
	header = strings.Replace(header, "create or replace function ", "create function ", 1)
	return header + " $$ " + strings.Join(strings.Fields(body), " ") + " $$ " + normalise(tail)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
