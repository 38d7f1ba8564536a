package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store/postgres"
	"github.com/lockledger/lockledger/store/sqlite"
	"github.com/lockledger/lockledger/verify"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// triggerDamage runs check on a new ledger, then again after tamper's
// statements, and returns the trigger problems of the second run (the
// first must find none).
func triggerDamage(t *testing.T, l *ledger.Ledger, check func(context.Context, replay.Querier, *verify.Report) error, tamper ...string) []string {
	t.Helper()
	ctx := context.Background()
	rep := &verify.Report{}
	if err := check(ctx, pgtest.Open(t, l.Source()), rep); err != nil || rep.ProblemCount != 0 {
		t.Fatalf("a new ledger: %v, problems %+v", err, rep.Problems)
	}
	for _, q := range tamper {
		if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rep = &verify.Report{}
	if err := check(ctx, pgtest.Open(t, l.Source()), rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		if p.Kind != verify.KindTrigger {
			t.Errorf("problem of kind %s, want only %s: %s", p.Kind, verify.KindTrigger, p.Detail)
		}
		got = append(got, p.Detail)
	}
	slices.Sort(got)
	return got
}

func open(t *testing.T, opts ...ledger.Option) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), t.TempDir(), append(opts, ledger.Unsigned())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestSQLiteTriggersThatAreMissingAlteredOrAddedAreDamage(t *testing.T) {
	l := open(t)
	got := triggerDamage(t, l, func(ctx context.Context, q replay.Querier, rep *verify.Report) error {
		return sqlite.CheckStorage(ctx, q, false, rep)
	},
		`DROP TRIGGER events_no_delete`,
		`DROP TRIGGER checkpoints_no_update`,
		`CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints BEGIN SELECT 1; END`,
		`CREATE TRIGGER zz_extra BEFORE UPDATE ON locks BEGIN SELECT 1; END`)
	want := []string{
		`checkpoints_no_update on table checkpoints is not the one the migrations create: it reads "CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints BEGIN SELECT 1; END"`,
		`events_no_delete on table events is missing (the migrations create it: CREATE TRIGGER events_no_delete BEFORE DELETE ON events)`,
		`zz_extra on table locks was not created by the migrations: it reads "CREATE TRIGGER zz_extra BEFORE UPDATE ON locks BEGIN SELECT 1; END"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
	}
}

func TestPostgresTriggersThatAreMissingDisabledOrAddedAreDamage(t *testing.T) {
	l := open(t, ledger.WithDatabase(pgtest.NewDatabase(t)))
	got := triggerDamage(t, l, postgres.CheckStorage,
		`DROP TRIGGER events_no_delete ON events`,
		`ALTER TABLE events DISABLE TRIGGER events_no_update`,
		`CREATE TRIGGER zz_extra BEFORE UPDATE ON checkpoints FOR EACH ROW EXECUTE FUNCTION lockledger_refuse()`)
	want := []string{
		"events_no_delete on table events is missing (the migrations create it)",
		"events_no_update on table events is disabled",
		"zz_extra on table checkpoints was not created by the migrations",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
	}
}

// A trigger left in place whose function was replaced (a no-op instead of
// the refusal), or altered, no longer guards anything: that is damage.
func TestPostgresReplacedTriggerFunctionsAreDamage(t *testing.T) {
	l := open(t, ledger.WithDatabase(pgtest.NewDatabase(t)))
	got := triggerDamage(t, l, postgres.CheckStorage,
		`CREATE OR REPLACE FUNCTION lockledger_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RETURN OLD;
END
$$`,
		`ALTER FUNCTION lockledger_events_append_or_restore() SECURITY DEFINER`,
		`DROP TRIGGER tlog_hashes_no_delete ON tlog_hashes`,
		`CREATE TRIGGER tlog_hashes_no_delete AFTER DELETE ON tlog_hashes FOR EACH ROW EXECUTE FUNCTION lockledger_tlog_delete()`)
	want := []string{
		`function lockledger_events_append_or_restore, which trigger events_no_replace on table events calls, is not the one the migrations define: it reads "CREATE OR REPLACE FUNCTION lockledger_events_append_or_restore() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $function$ BEGIN IF NEW.seq <> coalesce((SELECT max(seq) FROM events), 0) + 1 AND NOT EXISTS (SELECT 1 FROM prune_restore WHERE NEW.seq >= first_seq AND NEW.seq < below_seq AND marke"`,
		`function lockledger_refuse, which trigger checkpoints_no_delete on table checkpoints calls, is not the one the migrations define: it reads "CREATE OR REPLACE FUNCTION lockledger_refuse() RETURNS trigger LANGUAGE plpgsql AS $function$ BEGIN RETURN OLD; END $function$"`,
		`tlog_hashes_no_delete on table tlog_hashes is not the one the migrations create: it reads "CREATE TRIGGER tlog_hashes_no_delete AFTER DELETE ON tlog_hashes FOR EACH ROW EXECUTE FUNCTION lockledger_tlog_delete()"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
	}
}

// The triggers that refuse a REPLACE or an upsert of a Merkle row or a
// checkpoint, and a checkpoint beyond the log, are checked like the
// events' own: dropping one is damage on both engines.
func TestTheTreeTablesInsertTriggersAreChecked(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		got := triggerDamage(t, open(t), func(ctx context.Context, q replay.Querier, rep *verify.Report) error {
			return sqlite.CheckStorage(ctx, q, false, rep)
		}, `DROP TRIGGER tlog_hashes_no_replace`, `DROP TRIGGER checkpoints_no_replace`, `DROP TRIGGER checkpoints_within_log`)
		want := []string{
			"checkpoints_no_replace on table checkpoints is missing (the migrations create it: CREATE TRIGGER checkpoints_no_replace BEFORE INSERT ON checkpoints)",
			"checkpoints_within_log on table checkpoints is missing (the migrations create it: CREATE TRIGGER checkpoints_within_log BEFORE INSERT ON checkpoints)",
			"tlog_hashes_no_replace on table tlog_hashes is missing (the migrations create it: CREATE TRIGGER tlog_hashes_no_replace BEFORE INSERT ON tlog_hashes)",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		got := triggerDamage(t, open(t, ledger.WithDatabase(pgtest.NewDatabase(t))), postgres.CheckStorage,
			`DROP TRIGGER tlog_hashes_no_replace ON tlog_hashes`, `ALTER TABLE checkpoints DISABLE TRIGGER checkpoints_no_replace`)
		want := []string{
			"checkpoints_no_replace on table checkpoints is disabled",
			"tlog_hashes_no_replace on table tlog_hashes is missing (the migrations create it)",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
		}
	})
}

const cosignatureRow = `INSERT INTO cosignatures (id, size, root, witness, key, url, note, cosigned_at) VALUES (1, 1, 'r', 'w', 'k', 'u', 'n', 't')`

// The cosignatures table is append-only as the checkpoints are: an
// UPDATE, a DELETE and a REPLACE are refused, and dropping a guard is
// damage the storage check names, on both engines.
func TestTheCosignaturesTableIsAppendOnlyAndItsTriggersAreChecked(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		l := open(t)
		ctx := context.Background()
		if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, cosignatureRow); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`UPDATE cosignatures SET size = 2`, `DELETE FROM cosignatures`, strings.Replace(cosignatureRow, "INSERT", "INSERT OR REPLACE", 1),
			cosignatureRow + ` ON CONFLICT (id) DO UPDATE SET size = 2`} {
			if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "cosignatures are append-only") {
				t.Errorf("%s: %v, want it refused", q, err)
			}
		}
		got := triggerDamage(t, open(t), func(ctx context.Context, q replay.Querier, rep *verify.Report) error {
			return sqlite.CheckStorage(ctx, q, false, rep)
		}, `DROP TRIGGER cosignatures_no_replace`, `DROP TRIGGER cosignatures_no_delete`)
		want := []string{
			"cosignatures_no_delete on table cosignatures is missing (the migrations create it: CREATE TRIGGER cosignatures_no_delete BEFORE DELETE ON cosignatures)",
			"cosignatures_no_replace on table cosignatures is missing (the migrations create it: CREATE TRIGGER cosignatures_no_replace BEFORE INSERT ON cosignatures)",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		l := open(t, ledger.WithDatabase(pgtest.NewDatabase(t)))
		ctx := context.Background()
		if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, cosignatureRow); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`UPDATE cosignatures SET size = 2`, `DELETE FROM cosignatures`, `TRUNCATE cosignatures`,
			cosignatureRow + ` ON CONFLICT (id) DO UPDATE SET size = 2`} {
			if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, q); err == nil {
				t.Errorf("%s: accepted", q)
			}
		}
		got := triggerDamage(t, open(t, ledger.WithDatabase(pgtest.NewDatabase(t))), postgres.CheckStorage,
			`ALTER TABLE cosignatures DISABLE TRIGGER cosignatures_no_replace`)
		if want := []string{"cosignatures_no_replace on table cosignatures is disabled"}; !slices.Equal(got, want) {
			t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
		}
	})
}

// On PostgreSQL too the head's largest updated_seq of locks and
// lock_holders is served by an index on each (the planner's min/max path),
// so a write does not read every lock the ledger ever named.
func TestPostgresHeadReadsUpdatedSeqThroughAnIndex(t *testing.T) {
	ctx := context.Background()
	l := open(t, ledger.WithDatabase(pgtest.NewDatabase(t)))
	tx, err := pgtest.Open(t, l.Source()).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// The tables are small here: without the scan to fall back on, the
	// plan shows whether an index can serve the max at all.
	if _, err := tx.ExecContext(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"locks", "lock_holders"} {
		rows, err := tx.QueryContext(ctx, `EXPLAIN SELECT max(updated_seq) FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		if p := strings.Join(plan, "\n"); !strings.Contains(p, "Index Only Scan Backward using "+table+"_updated_seq") {
			t.Errorf("%s: the max of updated_seq is not read through %s_updated_seq:\n%s", table, table, p)
		}
	}
}

// A decision's functions are checked as the triggers' are: a writer that
// calls a replaced one (that writes no Merkle row, say) or finds none
// would fail or write other rows. A schema from before the migration that
// defines them (which a reader reads) is not missing them.
func TestPostgresDecisionFunctionsAreChecked(t *testing.T) {
	got := triggerDamage(t, open(t, ledger.WithDatabase(pgtest.NewDatabase(t))), postgres.CheckStorage,
		`CREATE OR REPLACE FUNCTION lockledger_write_decision(p json) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
END
$$`)
	want := []string{`function lockledger_write_decision is not the one the migrations define: it reads "CREATE OR REPLACE FUNCTION lockledger_write_decision(p json) RETURNS void LANGUAGE plpgsql AS $function$ BEGIN END $function$"`}
	if !slices.Equal(got, want) {
		t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
	}
	got = triggerDamage(t, open(t, ledger.WithDatabase(pgtest.NewDatabase(t))), postgres.CheckStorage,
		`DROP FUNCTION lockledger_read_decision(text, text, boolean)`)
	if want := []string{"function lockledger_read_decision is missing (the migrations define it)"}; !slices.Equal(got, want) {
		t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
	}
	got = triggerDamage(t, open(t, ledger.WithDatabase(pgtest.NewDatabase(t))), postgres.CheckStorage,
		`DROP FUNCTION lockledger_read_decision(text, text, boolean)`, `DROP FUNCTION lockledger_write_decision(json)`,
		`DELETE FROM schema_migrations WHERE version >= 12`)
	if len(got) != 0 {
		t.Fatalf("a schema from before the decision functions: %q", got)
	}
	// The read function as 0012 defined it, which 0013 replaced: another
	// definition on a schema at 13, the one a schema at 12 holds.
	all, err := migrations.Postgres.All()
	if err != nil {
		t.Fatal(err)
	}
	var at12 string
	for _, m := range all {
		if m.Version == 12 {
			at12 = m.SQL
		}
	}
	back := []string{`DROP FUNCTION lockledger_read_decision(text, text, boolean)`, `DROP FUNCTION lockledger_write_decision(json)`, at12}
	got = triggerDamage(t, open(t, ledger.WithDatabase(pgtest.NewDatabase(t))), postgres.CheckStorage, back...)
	if len(got) != 1 || !strings.HasPrefix(got[0], "function lockledger_read_decision is not the one the migrations define") {
		t.Fatalf("0012's read function on a schema at 13: %q, want it reported", got)
	}
	got = triggerDamage(t, open(t, ledger.WithDatabase(pgtest.NewDatabase(t))), postgres.CheckStorage,
		append(back, `DROP INDEX events_waiters`, `DELETE FROM schema_migrations WHERE version >= 13`)...)
	if len(got) != 0 {
		t.Fatalf("a schema at 12 with its own read function: %q", got)
	}
}
