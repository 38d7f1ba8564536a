// Package oldschema makes a ledger of this lockledger into one an older
// lockledger left, for the tests of opening and migrating it.
package oldschema

import (
	"fmt"

	"github.com/lockledger/lockledger/migrations"
)

// Version9 turns a SQLite ledger of this lockledger into the one schema
// version 9 left, holders and all: the exclusive holder back in its locks
// row (held = 1), lock_holders with its shared holders only. Tests that
// make an older ledger run it first; opening it for writing migrates it
// again.
var Version9 = []string{
	`DROP INDEX locks_updated_seq`,
	`DROP INDEX lock_holders_updated_seq`,
	`DROP INDEX events_lock_seq`,
	`DROP TABLE snapshots`,
	`ALTER TABLE locks ADD COLUMN held INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE locks ADD COLUMN actor TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE locks ADD COLUMN intent TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE locks ADD COLUMN intent_version TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE locks ADD COLUMN pid INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE locks ADD COLUMN pid_start TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE locks ADD COLUMN boot_id TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE locks ADD COLUMN created_at TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE locks ADD COLUMN heartbeat_at TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE locks ADD COLUMN ttl_seconds INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE locks ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'`,
	`ALTER TABLE locks ADD COLUMN pid_ns INTEGER`,
	`UPDATE locks SET (held, actor, intent, intent_version, pid, pid_start, boot_id, created_at, heartbeat_at, ttl_seconds, metadata, pid_ns) =
		(SELECT 1, actor, intent, intent_version, pid, pid_start, boot_id, created_at, heartbeat_at, ttl_seconds, metadata, pid_ns
		FROM lock_holders h WHERE h.lock_name = locks.lock_name AND h.exclusive = 1)
		WHERE EXISTS (SELECT 1 FROM lock_holders h WHERE h.lock_name = locks.lock_name AND h.exclusive = 1)`,
	`DELETE FROM lock_holders WHERE exclusive = 1`,
	`ALTER TABLE lock_holders DROP COLUMN exclusive`,
	`ALTER TABLE lock_holders DROP COLUMN targets`,
	`DELETE FROM schema_migrations WHERE version >= 10`,
}

// Postgres7 is Version9 for a PostgreSQL ledger: the one its schema
// version 7 left.
var Postgres7 = []string{
	`DROP FUNCTION lockledger_read_decision(text, text, boolean)`,
	`DROP FUNCTION lockledger_write_decision(json)`,
	`DROP INDEX events_waiters`,
	`DROP INDEX locks_updated_seq`,
	`DROP INDEX lock_holders_updated_seq`,
	`DROP TABLE snapshots`,
	`ALTER TABLE locks ADD COLUMN held integer NOT NULL DEFAULT 0, ADD COLUMN actor text NOT NULL DEFAULT '',
		ADD COLUMN intent text NOT NULL DEFAULT '', ADD COLUMN intent_version text NOT NULL DEFAULT '',
		ADD COLUMN pid bigint NOT NULL DEFAULT 0, ADD COLUMN pid_start text NOT NULL DEFAULT '',
		ADD COLUMN boot_id text NOT NULL DEFAULT '', ADD COLUMN created_at text NOT NULL DEFAULT '',
		ADD COLUMN heartbeat_at text NOT NULL DEFAULT '', ADD COLUMN ttl_seconds bigint NOT NULL DEFAULT 0,
		ADD COLUMN metadata text NOT NULL DEFAULT '{}', ADD COLUMN pid_ns bigint`,
	`UPDATE locks SET (held, actor, intent, intent_version, pid, pid_start, boot_id, created_at, heartbeat_at, ttl_seconds, metadata, pid_ns) =
		(SELECT 1, actor, intent, intent_version, pid, pid_start, boot_id, created_at, heartbeat_at, ttl_seconds, metadata, pid_ns
		FROM lock_holders h WHERE h.lock_name = locks.lock_name AND h.exclusive = 1)
		WHERE EXISTS (SELECT 1 FROM lock_holders h WHERE h.lock_name = locks.lock_name AND h.exclusive = 1)`,
	`DELETE FROM lock_holders WHERE exclusive = 1`,
	`ALTER TABLE lock_holders DROP COLUMN exclusive, DROP COLUMN targets`,
	`DELETE FROM schema_migrations WHERE version >= 8`,
}

// Postgres12 is the statements that turn a PostgreSQL ledger of this
// lockledger into the one schema version 12 left: 0012's decision
// functions as that migration defines them, and no index of the waiters.
func Postgres12() ([]string, error) {
	all, err := migrations.Postgres.All()
	if err != nil {
		return nil, err
	}
	for _, m := range all {
		if m.Version == 12 {
			return []string{
				`DROP INDEX events_waiters`,
				`DROP FUNCTION lockledger_read_decision(text, text, boolean)`,
				`DROP FUNCTION lockledger_write_decision(json)`,
				m.SQL,
				`DELETE FROM schema_migrations WHERE version >= 13`,
			}, nil
		}
	}
	return nil, fmt.Errorf("oldschema: no PostgreSQL migration 12")
}
