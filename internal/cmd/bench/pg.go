package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for the raw reference

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/migrations"
)

var (
	database = flag.String("database", "", "PostgreSQL server for the pg rows: a URL whose role may CREATE DATABASE\n"+
		"(the bench creates and drops its own databases there); none: a throwaway cluster started here")
	pgCycles = flag.Int("pg-cycles", 200, "acquire/release cycles per host in the PostgreSQL contention row")
)

// pgServer makes and drops the databases the pg rows run in.
type pgServer interface {
	CreateDatabase(name string) error
	DropDatabase(name string) error
}

// urlServer is the -database server, reached as its URL's role.
type urlServer struct{ base string }

func (s urlServer) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func (s urlServer) CreateDatabase(name string) error {
	return s.exec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize())
}

func (s urlServer) DropDatabase(name string) error {
	return s.exec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)")
}

// withDatabase returns base with its database replaced by name.
func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		die(fmt.Errorf("-database: %w", err))
	}
	u.Path = "/" + name
	return u.String()
}

// rawBody is the size of the reference rows' body: with the other columns
// a row is about 600 bytes, as a ledger event's is.
const rawBody = 376

// rawInsertSQL is one reference row for psql: the next seq, random ids,
// the database's time, a rawBody-byte body and two 64-character hashes.
var rawInsertSQL = `INSERT INTO events SELECT coalesce(max(seq), 0) + 1, md5(random()::text), 'acquire', 'bench', ` +
	`md5(random()::text), 'bench', clock_timestamp()::text, decode(repeat('78', ` + strconv.Itoa(rawBody) + `), 'hex'), ` +
	`repeat('0', 64), repeat('1', 64) FROM events`

func benchPostgres(tmp string) {
	var srv pgServer
	var base, psql, logPath string
	var cluster *pgtest.Cluster // the one started here, nil with -database
	if *database != "" {
		base = *database
		srv = urlServer{base}
		psql, _ = exec.LookPath("psql")
	} else {
		c, err := pgtest.StartCluster()
		if errors.Is(err, pgtest.ErrNoServer) {
			add(row{"PostgreSQL rows", "skipped: PostgreSQL server programs not found (give -database URL to use a server)", "-", "-", "-", "-"})
			return
		}
		if err != nil {
			die(err)
		}
		defer cleanup(func() {
			if err := c.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "bench: stopping PostgreSQL:", err)
			}
		})()
		base, srv, logPath, cluster = c.SocketURL("postgres"), c, c.LogPath(), c
		if p := filepath.Join(c.BinDir, "psql"); fileExists(p) {
			psql = p
		} else {
			psql, _ = exec.LookPath("psql")
		}
	}
	prefix := fmt.Sprintf("lockledger_bench_%d_", os.Getpid())
	newDB := func(name string) string {
		name = prefix + name
		if err := srv.CreateDatabase(name); err != nil {
			die(err)
		}
		dbs = append(dbs, name)
		return withDatabase(base, name)
	}
	defer func() {
		if *keep {
			fmt.Fprintf(os.Stderr, "keeping the PostgreSQL databases %v\n", dbs)
			return
		}
		for _, name := range dbs {
			if err := srv.DropDatabase(name); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
			}
		}
	}()

	ctx := context.Background()
	if want("pg") {
		pgLibrary(ctx, tmp, newDB("lib"), newDB("raw"))
		if psql == "" {
			add(row{"PostgreSQL: `run NAME -- true` vs `psql` two commits", "skipped: psql not found", "-", "-", "-", "-"})
		} else {
			pgCLI(tmp, newDB("cli"), newDB("raw_psql"), psql)
		}
		if logPath != "" {
			pgStatements(ctx, tmp, newDB("statements"), logPath)
		}
		pgContention(tmp, newDB("contention"))
	}
	pgClients(ctx, tmp, cluster, newDB)
}

// dbs are the databases this run made, dropped at its end.
var dbs []string

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// openRaw connects to u and creates the reference table there: the
// ledger's own events table as the PostgreSQL migrations make it, with
// its columns, constraints and indexes but not its append-only triggers
// (the reference is the commit of one such row, not the ledger's checks).
// The migrations run in a scratch schema that is dropped afterwards.
func openRaw(ctx context.Context, u string) *sql.DB {
	db, err := sql.Open("pgx", u)
	if err != nil {
		die(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		die(err)
	}
	defer conn.Close()
	step := func(q string) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			die(fmt.Errorf("creating the reference table: %s: %w", q, err))
		}
	}
	step(`CREATE SCHEMA lockledger_reference`)
	step(`SET search_path = lockledger_reference`)
	if err := migrations.Postgres.Apply(ctx, conn, func() string { return time.Now().UTC().Format(time.RFC3339Nano) }); err != nil {
		die(fmt.Errorf("creating the reference table: %w", err))
	}
	step(`RESET search_path`)
	step(`CREATE TABLE events (LIKE lockledger_reference.events INCLUDING ALL)`)
	step(`DROP SCHEMA lockledger_reference CASCADE`)
	return db
}

// pgLibrary: the Go API's cycles against two one-row transactions through
// database/sql and pgx's stdlib driver, as the ledger talks to the server.
func pgLibrary(ctx context.Context, tmp, ledgerURL, rawURL string) {
	l, err := ledger.Open(ctx, filepath.Join(tmp, "pg-lib"), ledger.WithDatabase(ledgerURL), ledger.Unsigned())
	if err != nil {
		die(err)
	}
	defer l.Close()
	db := openRaw(ctx, rawURL)
	defer db.Close()
	commit := pgRawCommit(ctx, db)
	cycle := func() { cycleOn(ctx, l) }
	cycle() // the first cycle prepares the statements
	commit()
	var lib, raw []float64
	for i := 0; i < 6; i++ {
		lib = append(lib, rate(cycle, *libTime/6))
		raw = append(raw, rate(func() { commit(); commit() }, *libTime/6))
	}
	ml, mr := median(lib), median(raw)
	var evRow, rawRow float64
	ldb, err := sql.Open("pgx", ledgerURL)
	if err != nil {
		die(err)
	}
	defer ldb.Close()
	_ = ldb.QueryRowContext(ctx, `SELECT avg(pg_column_size(e.*)) FROM events e`).Scan(&evRow)
	_ = db.QueryRowContext(ctx, `SELECT avg(pg_column_size(e.*)) FROM events e`).Scan(&rawRow)
	add(row{fmt.Sprintf("PostgreSQL: Go API acquire+release cycles/s vs raw 2-commit cycles/s (database/sql + pgx stdlib, same server, events table and indexes; rows %.0f / %.0f bytes)", evRow, rawRow),
		fmt.Sprintf("%.0f/s", ml), fmt.Sprintf("%.0f/s", mr), fmt.Sprintf("%.0f%%", 100*ml/mr), "report", "-"})
}

// pgCLI: whole `lockledger run` processes against whole psql processes
// committing two rows, alternated.
func pgCLI(tmp, ledgerURL, rawURL, psql string) {
	openRaw(context.Background(), rawURL).Close()
	env := append(cliEnv(filepath.Join(tmp, "pg-trust")), "LOCKLEDGER_ROOT="+filepath.Join(tmp, "pg-cli"), "LOCKLEDGER_DATABASE_URL="+ledgerURL)
	two := "BEGIN; " + rawInsertSQL + "; COMMIT; BEGIN; " + rawInsertSQL + "; COMMIT;"
	psqlArgs := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", rawURL, "-c", two}
	timeCmd(env, *bin, "--log-level", "error", "run", "warm", "--", "true") // create the ledger once
	timeCmd(env, psql, psqlArgs...)
	var ll, pl []time.Duration
	for i := 0; i < *pairs; i++ {
		ll = append(ll, timeCmd(env, *bin, "--log-level", "error", "run", "bench", "--", "true"))
		pl = append(pl, timeCmd(env, psql, psqlArgs...))
	}
	r := float64(median(ll)) / float64(median(pl))
	add(row{"PostgreSQL: `--database URL run NAME -- true` vs `psql -c 'BEGIN; INSERT; COMMIT; BEGIN; INSERT; COMMIT'` (median of " + strconv.Itoa(*pairs) + " alternated pairs)",
		ms(median(ll)), ms(median(pl)), fmt.Sprintf("%.2fx", r), "report", "-"})
}

// pgStatements counts what one acquire+release cycle sends, from the
// server's log with every statement and its parse/bind/execute logged for
// the database: statements executed, and how many of them were parsed
// anew (a statement cached on the connection is only bound and executed).
func pgStatements(ctx context.Context, tmp, u, logPath string) {
	name := strings.TrimPrefix(mustParse(u).Path, "/")
	l, err := ledger.Open(ctx, filepath.Join(tmp, "pg-statements"), ledger.WithDatabase(u), ledger.Unsigned())
	if err != nil {
		die(err)
	}
	defer func() { l.Close() }()
	// l is opened again below: each call cycles on the l of the moment.
	cycle := func() { cycleOn(ctx, l) }
	cycle()
	// Settings of a database apply to the sessions opened after them.
	if err := (urlServer{u}).exec("ALTER DATABASE " + pgx.Identifier{name}.Sanitize() + " SET log_min_duration_statement = 0"); err != nil {
		die(err)
	}
	l.Close()
	if l, err = ledger.Open(ctx, filepath.Join(tmp, "pg-statements"), ledger.WithDatabase(u), ledger.Unsigned()); err != nil {
		die(err)
	}
	cycle() // prepares on the new connections
	before, err := os.ReadFile(logPath)
	if err != nil {
		die(err)
	}
	cycle()
	after, err := os.ReadFile(logPath)
	if err != nil {
		die(err)
	}
	var execs, parse int
	var stmts []string
	for _, line := range strings.Split(string(after[len(before):]), "\n") {
		_, msg, ok := strings.Cut(line, "LOG:  duration: ")
		if !ok {
			continue
		}
		_, what, _ := strings.Cut(msg, " ms  ")
		switch {
		case strings.HasPrefix(what, "parse "):
			parse++
		case strings.HasPrefix(what, "execute "), strings.HasPrefix(what, "statement: "):
			execs++
			if _, s, ok := strings.Cut(what, ": "); ok {
				stmts = append(stmts, strings.Join(strings.Fields(s), " "))
			}
		}
	}
	fmt.Fprintln(os.Stderr, "  statements of one acquire+release cycle:")
	for _, s := range stmts {
		fmt.Fprintln(os.Stderr, "    "+clip(s, 110))
	}
	add(row{"PostgreSQL: statements one Go API acquire+release cycle executes (parsed anew), from the server's log, vs the raw 2-commit cycle",
		fmt.Sprintf("%d (%d)", execs, parse), "6 (0)", fmt.Sprintf("%.1fx", float64(execs)/6), "report", "-"})
}

func mustParse(u string) *url.URL {
	p, err := url.Parse(u)
	if err != nil {
		die(err)
	}
	return p
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// pgContention: 8 hosts (host ids, roots and connections of their own)
// cycling on one lock in one PostgreSQL ledger.
func pgContention(tmp, u string) {
	l, err := ledger.Open(context.Background(), filepath.Join(tmp, "pg-contention", "setup"), ledger.WithDatabase(u), ledger.Unsigned())
	if err != nil {
		die(err)
	}
	l.Close()
	var ws []workerSpec
	for i := 0; i < 8; i++ {
		ws = append(ws, workerSpec{root: filepath.Join(tmp, "pg-contention", fmt.Sprintf("host-%d", i)), lock: "shared",
			database: u, host: fmt.Sprintf("bench-host-%d", i), cycles: *pgCycles})
	}
	lat, took := runWorkers(ws)
	add(row{fmt.Sprintf("PostgreSQL: 8 hosts x %d cycles on 1 shared lock: cycles/s, acquire p50 / p99", *pgCycles),
		contentionFigure(lat, took), "-", "-", "report", "-"})
}
