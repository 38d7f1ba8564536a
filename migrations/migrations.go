// Package migrations holds the ledger's schema as embedded SQL files,
// applied in name order, each in its own transaction, and recorded in
// schema_migrations.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Migration is one embedded SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// All returns every migration in order.
func All() ([]Migration, error) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Migration
	for _, n := range names {
		prefix, _, ok := strings.Cut(n, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("migrations: %s: name must start with a number and _", n)
		}
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: n, SQL: string(b)})
	}
	return out, nil
}

// Latest is the highest embedded version.
func Latest() int {
	all, err := All()
	if err != nil || len(all) == 0 {
		return 0
	}
	return all[len(all)-1].Version
}

// Current returns the highest applied version, 0 for a fresh database.
func Current(ctx context.Context, db *sql.DB) (int, error) {
	var exists int
	if err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_migrations'`).Scan(&exists); err != nil {
		return 0, err
	}
	if exists == 0 {
		return 0, nil
	}
	var v sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// Apply applies every migration newer than the database. The database must
// begin its transactions with BEGIN IMMEDIATE, so that concurrent first
// opens serialise on the write lock and each migration is applied once.
func Apply(ctx context.Context, db *sql.DB, now func() string) error {
	all, err := All()
	if err != nil {
		return err
	}
	cur, err := Current(ctx, db)
	if err != nil {
		return err
	}
	for _, m := range all {
		if m.Version <= cur {
			continue
		}
		if err := applyOne(ctx, db, m, now); err != nil {
			return fmt.Errorf("migrations: %s: %w", m.Name, err)
		}
	}
	return nil
}

func applyOne(ctx context.Context, db *sql.DB, m Migration, now func() string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		return err
	}
	var done int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&done); err != nil {
		return err
	}
	if done > 0 {
		return nil // another process applied it while we waited for the write lock
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, now()); err != nil {
		return err
	}
	return tx.Commit()
}

// Tables names every table the migrations create, schema_migrations
// included: a database with any other table is not the ledger's.
func Tables() (map[string]bool, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{"schema_migrations": true}
	for _, m := range all {
		f := strings.Fields(m.SQL)
		for i := 0; i+2 < len(f); i++ {
			if !strings.EqualFold(f[i], "CREATE") || !strings.EqualFold(f[i+1], "TABLE") {
				continue
			}
			j := i + 2
			if j+3 < len(f) && strings.EqualFold(f[j], "IF") && strings.EqualFold(f[j+1], "NOT") && strings.EqualFold(f[j+2], "EXISTS") {
				j += 3
			}
			name, _, _ := strings.Cut(f[j], "(")
			out[strings.ToLower(strings.Trim(name, "\"`[]"))] = true
		}
	}
	return out, nil
}
