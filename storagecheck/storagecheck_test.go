package storagecheck_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/storagecheck"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// triggerDamage runs check on a new ledger, then again after tamper's
// statements, and returns the trigger problems of the second run (the
// first must find none).
func triggerDamage(t *testing.T, l *ledger.Ledger, check func(context.Context, replay.Querier, *replay.Report) error, tamper ...string) []string {
	t.Helper()
	ctx := context.Background()
	rep := &replay.Report{}
	if err := check(ctx, l.DB(), rep); err != nil || rep.ProblemCount != 0 {
		t.Fatalf("a new ledger: %v, problems %+v", err, rep.Problems)
	}
	for _, q := range tamper {
		if _, err := l.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rep = &replay.Report{}
	if err := check(ctx, l.DB(), rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		if p.Kind != replay.KindTrigger {
			t.Errorf("problem of kind %s, want only %s: %s", p.Kind, replay.KindTrigger, p.Detail)
		}
		got = append(got, p.Detail)
	}
	slices.Sort(got)
	return got
}

func TestSQLiteTriggersThatAreMissingAlteredOrAddedAreDamage(t *testing.T) {
	l := fixture.Open(t, "")
	got := triggerDamage(t, l, func(ctx context.Context, q replay.Querier, rep *replay.Report) error {
		return storagecheck.SQLite(ctx, q, false, rep)
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
	l := fixture.OpenPostgres(t, pgtest.NewDatabase(t))
	got := triggerDamage(t, l, storagecheck.Postgres,
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
