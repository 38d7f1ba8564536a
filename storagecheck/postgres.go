package storagecheck

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/replay"
)

// Postgres adds to rep every append-only trigger the migrations create
// that is missing from the schema q reads, or disabled (ALTER TABLE ...
// DISABLE TRIGGER, or session_replication_role = replica for
// origin-enabled ones), and every trigger they do not create. PostgreSQL
// checks its own pages: there is no file to check. Only a cancelled ctx,
// or migrations that cannot be read, is returned.
func Postgres(ctx context.Context, q replay.Querier, rep *replay.Report) error {
	want, err := migrations.Postgres.Triggers()
	if err != nil {
		return err
	}
	rows, err := q.QueryContext(ctx, `SELECT t.tgname, c.relname, t.tgenabled::text FROM pg_catalog.pg_trigger t
		JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
		WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		return rep.ReadFailure(ctx, "the schema's triggers", err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var name, table, enabled string
		if err := rows.Scan(&name, &table, &enabled); err != nil {
			return rep.ReadFailure(ctx, "the schema's triggers", err)
		}
		got[name] = enabled
		if _, ok := want[name]; !ok {
			rep.Add(replay.Problem{Kind: replay.KindTrigger, Detail: fmt.Sprintf("%s on table %s was not created by the migrations", name, table)})
		}
	}
	if err := rows.Err(); err != nil {
		return rep.ReadFailure(ctx, "the schema's triggers", err)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		switch e, ok := got[name]; {
		case !ok:
			rep.Add(replay.Problem{Kind: replay.KindTrigger, Detail: fmt.Sprintf("%s on table %s is missing (the migrations create it)", name, want[name])})
		case e == "D":
			rep.Add(replay.Problem{Kind: replay.KindTrigger, Detail: fmt.Sprintf("%s on table %s is disabled", name, want[name])})
		}
	}
	return nil
}
