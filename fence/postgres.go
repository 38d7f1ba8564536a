package fence

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockledger/lockledger/events"
)

// SQLStateStale is the SQLSTATE the lockledger_fence trigger raises for a
// row whose fencing_token is below its resource's current token. Class
// LF is one PostgreSQL does not use.
const SQLStateStale = "LF001"

// PostgresSQL installs the PostgreSQL fence: the lockledger_fences table
// (each fenced resource's current token) and lockledger_fence(), the
// trigger function a table attaches to (AttachSQL). Before every INSERT
// and UPDATE of a row, the function locks its resource's row in
// lockledger_fences (writers of one resource go one at a time until
// they commit), refuses the row with SQLSTATE LF001 when its
// fencing_token is below the resource's token, and otherwise makes that
// token the resource's. The resource is the trigger's argument, else
// SCHEMA.TABLE. Running it again changes nothing it made.
const PostgresSQL = `CREATE TABLE IF NOT EXISTS lockledger_fences (
    resource text PRIMARY KEY,
    token    bigint NOT NULL CHECK (token >= 1)
);

CREATE OR REPLACE FUNCTION lockledger_fence() RETURNS trigger
LANGUAGE plpgsql AS $fence$
DECLARE
    res text := coalesce(TG_ARGV[0], TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME);
    tok bigint := NEW.fencing_token;
    cur bigint;
BEGIN
    IF tok IS NULL OR tok < 1 THEN
        RAISE EXCEPTION 'lockledger fence %: fencing_token must be a positive integer, not %', res, coalesce(tok::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO lockledger_fences (resource, token) VALUES (res, tok) ON CONFLICT (resource) DO NOTHING;
    SELECT token INTO cur FROM lockledger_fences WHERE resource = res FOR UPDATE;
    IF cur IS NULL THEN
        -- Inserted by a transaction this one's snapshot does not see
        -- (REPEATABLE READ, SERIALIZABLE): retry the transaction.
        RAISE EXCEPTION 'lockledger fence %: the resource''s token is not visible to this transaction', res
            USING ERRCODE = 'serialization_failure';
    END IF;
    IF tok < cur THEN
        RAISE EXCEPTION 'lockledger fence %: fencing token % is stale: the resource has seen token %, a later holding''s', res, tok, cur
            USING ERRCODE = 'LF001',
                  DETAIL = json_build_object('resource', res, 'token', tok, 'current', cur)::text,
                  HINT = 'the lock was taken over since this token was given; stop writing';
    END IF;
    IF tok > cur THEN
        UPDATE lockledger_fences SET token = tok WHERE resource = res;
    END IF;
    RETURN NEW;
END
$fence$;
`

// AttachSQL is the statement that fences table (a name, or schema and
// name) as resource ("" names it SCHEMA.TABLE): every row inserted or
// updated must carry a bigint fencing_token.
func AttachSQL(table pgx.Identifier, resource string) string {
	arg := ""
	if resource != "" {
		arg = "'" + strings.ReplaceAll(resource, "'", "''") + "'"
	}
	name := pgx.Identifier{"lockledger_fence"}.Sanitize()
	return "CREATE OR REPLACE TRIGGER " + name + " BEFORE INSERT OR UPDATE ON " + table.Sanitize() +
		" FOR EACH ROW EXECUTE FUNCTION lockledger_fence(" + arg + ")"
}

// Execer is what InstallPostgres runs its SQL on: a *sql.DB, *sql.Conn
// or *sql.Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// InstallPostgres runs PostgresSQL and, for each table given, AttachSQL
// with the table's own name as resource.
func InstallPostgres(ctx context.Context, db Execer, tables ...pgx.Identifier) error {
	if _, err := db.ExecContext(ctx, PostgresSQL); err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := db.ExecContext(ctx, AttachSQL(t, "")); err != nil {
			return err
		}
	}
	return nil
}

// AsStale finds the refusal in err: a *StaleError, or the PostgreSQL
// fence's (SQLSTATE LF001, from pgx or its database/sql driver) as one
// with Fence events.FencePostgresWrite. ok is false for any other error.
func AsStale(err error) (stale *StaleError, ok bool) {
	if errors.As(err, &stale) {
		return stale, true
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != SQLStateStale {
		return nil, false
	}
	var d struct {
		Resource string `json:"resource"`
		Token    int64  `json:"token"`
		Current  int64  `json:"current"`
	}
	if json.Unmarshal([]byte(pe.Detail), &d) != nil {
		return nil, false
	}
	return &StaleError{Fence: events.FencePostgresWrite, Resource: d.Resource, Token: d.Token, Current: d.Current}, true
}
