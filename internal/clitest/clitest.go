// Package clitest runs the lockledger command line as real processes from
// tests. The CLI is the one named by LOCKLEDGER_TEST_CLI (make test builds
// it once for every package), else built once per test binary from this
// module, static as make build and a release build it. A test that wants
// the race detector in the CLI's own goroutines (run's lease and signals,
// the follower, a witness's bounded wait) marks its root with Race: its
// commands run as the test binary itself where that is built with -race,
// else as a CLI built with -race (LOCKLEDGER_TEST_RACE_CLI).
//
// A test package opts in with
//
//	func TestMain(m *testing.M) { clitest.Main(m) }
package clitest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/lockledger/lockledger/cli"
	"github.com/lockledger/lockledger/internal/pgtest"
)

const envCLI = "LOCKLEDGER_TEST_AS_CLI"

// Main runs the CLI when the binary was started as one, else the tests.
func Main(m *testing.M, opts ...Option) {
	if os.Getenv(envCLI) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	flag.Parse()
	// The CLI is built from the package's own directory, inside the
	// module, whatever directory a test moves to before the first Bin.
	moduleDir, _ = os.Getwd()
	for _, o := range opts {
		o()
	}
	code := pgtest.Run(m)
	for _, f := range atExit {
		f()
	}
	report()
	removeFixtures()
	if d := otherTrust.dir; d != "" {
		os.RemoveAll(d)
	}
	for _, b := range []*cliBuild{built, raceBuilt} {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
	os.Exit(code)
}

// moduleDir is the test's package directory, inside the module, from
// which a CLI is built.
var moduleDir string

// cliBuild is one CLI the tests run, named by a variable (make test builds
// each once for every package) or else built on first use.
type cliBuild struct {
	env   string   // the variable that names one already built
	flags []string // go build's
	cgo   string   // CGO_ENABLED
	once  sync.Once
	dir   string
	path  string
}

var (
	// built is Bin. Static, as make build and a release build it: a
	// dynamically linked CLI costs each of the thousands of commands the
	// tests run about a fifth more CPU at start.
	built = &cliBuild{env: "LOCKLEDGER_TEST_CLI", cgo: "0"}
	// raceBuilt is the CLI of a Race root where the test binary is not
	// built with -race itself: make test runs e2e without the race
	// detector (its own code is the tests', and the detector doubled its
	// CPU), and the CLI's concurrent parts under it here. SQLite's C
	// translated to Go, its C library and allocator are left out of it,
	// as in make test.
	raceBuilt = &cliBuild{env: "LOCKLEDGER_TEST_RACE_CLI", cgo: "1", flags: []string{"-race",
		"-gcflags=modernc.org/sqlite/lib=-race=false", "-gcflags=modernc.org/libc/...=-race=false", "-gcflags=modernc.org/memory=-race=false"}}
)

// get is the CLI's path. Where it cannot be built (no go command, no
// module source) it is the test binary itself, said on stderr.
func (b *cliBuild) get() string {
	b.once.Do(func() {
		if p := os.Getenv(b.env); p != "" {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
			b.path = p
			return
		}
		var err error
		if b.path, err = b.build(); err != nil {
			fmt.Fprintf(os.Stderr, "clitest: the CLI could not be built (%v); the test binary runs as the CLI\n", err)
			b.path = self()
		}
	})
	return b.path
}

func (b *cliBuild) build() (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	if b.dir, err = os.MkdirTemp("", "lockledger-test-cli-"); err != nil {
		return "", err
	}
	out := filepath.Join(b.dir, "lockledger")
	// No VCS stamp, as a test binary has none.
	args := append(append([]string{"build", "-buildvcs=false"}, b.flags...), "-o", out, "github.com/lockledger/lockledger")
	c := exec.Command(gobin, args...)
	c.Dir = moduleDir
	c.Env = append(os.Environ(), "CGO_ENABLED="+b.cgo)
	if msg, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w: %s", err, msg)
	}
	return out, nil
}

// Bin is the lockledger executable the tests run (with Env): the one
// LOCKLEDGER_TEST_CLI names, else the CLI built from this module on first
// use.
func Bin() string { return built.get() }

// raceBin runs the commands of a Race root: the test binary itself where
// it is built with -race, else the CLI built with -race
// (LOCKLEDGER_TEST_RACE_CLI names one already built).
func raceBin() string {
	if bi, ok := debug.ReadBuildInfo(); ok && slices.Contains(bi.Settings, debug.BuildSetting{Key: "-race", Value: "true"}) {
		return self()
	}
	return raceBuilt.get()
}

// self is the test binary, which acts as the CLI under Env.
func self() string {
	p, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return p
}

var race sync.Map // root -> true: Race

// Race makes the commands of Command(ctx, root, ...) run under the race
// detector (raceBin) for the rest of t: for tests of the CLI's concurrent
// parts.
func Race(t testing.TB, root string) {
	race.Store(filepath.Clean(root), true)
	t.Cleanup(func() { race.Delete(filepath.Clean(root)) })
}

// An Option changes how Main runs the tests.
type Option func()

// Parallel runs n parallel tests at once unless -parallel says otherwise:
// for tests that wait on processes (busy timeouts, TTLs, kill graces)
// far more than they compute.
func Parallel(n int) Option {
	return func() {
		given := false
		flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
		if !given {
			flag.Set("test.parallel", strconv.Itoa(n))
		}
	}
}

// atExit are the functions Main calls when the tests have run (AtExit).
var atExit []func()

// AtExit has Main call f when the tests have run, before the binary
// exits: to stop what the tests share, such as a browser.
func AtExit(f func()) Option {
	return func() { atExit = append(atExit, f) }
}

// BuildFirst builds the CLI before the first test rather than in the
// first test's Bin, whose command's deadline would then count the build.
func BuildFirst() { Bin() }

// otherTrust holds the trust stores of roots outside a test's temporary
// directory (a PostgreSQL test's unused root ""): one directory for the
// test binary, removed when it ends.
var otherTrust struct {
	once sync.Once
	dir  string
}

// Env is the environment that makes Bin act as the CLI, for root, with a
// trust store of its own outside root (TrustDir).
func Env(root string, extra ...string) []string {
	// The race runtime sleeps 1 s at exit unless told otherwise.
	env := []string{envCLI + "=1", "LOCKLEDGER_ROOT=" + root, "NO_COLOR=1", "USER=tester", "GORACE=atexit_sleep_ms=0",
		"LOCKLEDGER_TRUST_DIR=" + TrustDir(root),
		// What a command keeps between runs (metrics' state) stays beside
		// the test's trust store, out of the real home.
		"XDG_CACHE_HOME=" + TrustDir(root) + "-cache"}
	if isUnsigned(root) {
		env = append(env, "LOCKLEDGER_UNSIGNED=1")
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LOCKLEDGER_") || strings.HasPrefix(kv, "USER=") || strings.HasPrefix(kv, "NO_COLOR=") ||
			strings.HasPrefix(kv, "GORACE=") || strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

var unsigned sync.Map // root -> true: Unsigned

// Unsigned makes the commands of Env(root) write unsigned unless given a
// key (LOCKLEDGER_UNSIGNED=1), as before signing was on by default: for
// tests of explicit keys, where a write without the key stands for a
// writer that has none.
func Unsigned(t testing.TB, root string) {
	unsigned.Store(filepath.Clean(root), true)
	t.Cleanup(func() { unsigned.Delete(filepath.Clean(root)) })
}

func isUnsigned(root string) bool {
	_, ok := unsigned.Load(filepath.Clean(root))
	return ok
}

// TrustDir is the trust store the commands of Env(root) use, never
// inside a root and never the real home: one per test, as a user has one
// for all roots (TMPDIR/TestName.../trust for a root in a t.TempDir()),
// else one per root in a directory of the test binary's own.
func TrustDir(root string) string {
	r := filepath.Clean(root)
	tmp := filepath.Clean(os.TempDir())
	if rel, err := filepath.Rel(tmp, r); err == nil && strings.HasPrefix(rel, "Test") {
		if first, _, ok := strings.Cut(rel, string(filepath.Separator)); ok {
			return filepath.Join(tmp, first, "trust")
		}
	}
	otherTrust.once.Do(func() {
		otherTrust.dir, _ = os.MkdirTemp("", "lockledger-test-trust-")
	})
	abs, _ := filepath.Abs(r)
	return filepath.Join(otherTrust.dir, strings.ReplaceAll(strings.Trim(abs, string(filepath.Separator)), string(filepath.Separator), "_"))
}

// TrustDirAs makes a trust store for uid beside root (mode 0700, owned by
// uid) and returns the variable that points the CLI at it: a command run
// as another user needs a trust store of its own.
func TrustDirAs(t testing.TB, root string, uid int) string {
	t.Helper()
	d := fmt.Sprintf("%s-uid%d", TrustDir(root), uid)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, uid, -1); err != nil {
		t.Fatal(err)
	}
	return "LOCKLEDGER_TRUST_DIR=" + d
}

// Command prepares lockledger ARGS... on root.
func Command(ctx context.Context, root string, args ...string) *exec.Cmd {
	bin := Bin()
	if _, ok := race.Load(filepath.Clean(root)); ok {
		bin = raceBin()
	}
	c := exec.CommandContext(ctx, bin, args...)
	c.Env = Env(root)
	account(c, root)
	return c
}

// Result is a finished command.
type Result struct {
	Code   int
	Stdout string
	Stderr string
}

// Run runs lockledger ARGS... on root and waits for it.
func Run(t testing.TB, root string, args ...string) Result {
	t.Helper()
	return RunIn(t, root, "", args...)
}

// RunIn is Run with standard input.
func RunIn(t testing.TB, root, stdin string, args ...string) Result {
	t.Helper()
	return RunWith(t, root, nil, stdin, args...)
}

// RunWith is RunIn with more environment (VAR=value) for the command.
func RunWith(t testing.TB, root string, env []string, stdin string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := Command(ctx, root, args...)
	c.Env = append(c.Env, env...)
	c.Stdin = strings.NewReader(stdin)
	return Exec(t, c)
}

// Exec runs c, a command prepared by the caller (Bin under a wrapper, as
// another user, with Env), waits for it and returns its exit code and
// output; it fails the test if c could not run at all. Standard input is
// empty unless c has one.
func Exec(t testing.TB, c *exec.Cmd) Result {
	t.Helper()
	r, err := Output(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Output is Exec for a goroutine, which must not fail the test: the
// error says why c could not run, for the test's own goroutine to report.
func Output(c *exec.Cmd) (Result, error) {
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	account(c, rootOf(c))
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return Result{Code: ee.ExitCode(), Stdout: out.String(), Stderr: errb.String()}, nil
	} else if err != nil {
		return Result{}, fmt.Errorf("%s: %w", strings.Join(c.Args, " "), err)
	}
	return Result{Stdout: out.String(), Stderr: errb.String()}, nil
}

// Must runs and fails the test unless the exit code is want.
func Must(t testing.TB, want int, root string, args ...string) Result {
	t.Helper()
	return MustWith(t, want, root, nil, args...)
}

// MustWith is Must with more environment (VAR=value), as RunWith.
func MustWith(t testing.TB, want int, root string, env []string, args ...string) Result {
	t.Helper()
	r := RunWith(t, root, env, "", args...)
	if r.Code != want {
		t.Fatalf("lockledger %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

// DB opens root's ledger.db read-only for assertions.
func DB(t testing.TB, root string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, "ledger.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// EventCount is the number of events in root's ledger (0 if there is none).
func EventCount(t testing.TB, root string) int {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "ledger.db")); err != nil {
		return 0
	}
	var n int
	if err := DB(t, root).QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Types lists the event types in seq order.
func Types(t testing.TB, root string) []string {
	t.Helper()
	return Strings(t, root, `SELECT type FROM events ORDER BY seq`)
}

// Unqueued is the types of root's events in seq order, without the
// acquire_blocked with which each waiter joins a lock's queue or renews
// its place there (those carrying until): what a test of anything but the
// queue counts.
func Unqueued(t testing.TB, root string) []string {
	t.Helper()
	return Strings(t, root, `SELECT type FROM events WHERE NOT (type = 'acquire_blocked' AND json_extract(body, '$.until') IS NOT NULL) ORDER BY seq`)
}

// Strings runs a query whose rows are one text column on root's ledger.
func Strings(t testing.TB, root, query string) []string {
	t.Helper()
	rows, err := DB(t, root).Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// NeedBinary skips the test, loudly, when one of the programs it drives is
// not installed; under CI (LOCKLEDGER_CI=1, set by .ci/run, which installs
// them) a missing program fails the test instead.
func NeedBinary(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("LOCKLEDGER_CI") == "1" {
				t.Fatalf("%s is not installed, and CI requires every test to run", name)
			}
			t.Skipf("SKIPPED: %s is not installed, so this test cannot run here (CI installs it)", name)
		}
	}
}

// fixtures are the directories Fixture built, by name; Main removes them.
var fixtures struct {
	sync.Mutex
	m map[string]*fixture
}

type fixture struct {
	once sync.Once
	dir  string
	ok   bool
}

// Fixture is a directory that build fills once per test binary, for the
// tests that only read it or copy it (Copy): an expensive set-up (a
// ledger with events, a signed root) made once rather than by each test.
// build runs in the first test that asks; if it fails, every test that
// asks fails. The directory is named Test... under the temporary
// directory, so the roots inside it get their trust store there (TrustDir).
func Fixture(t testing.TB, name string, build func(t testing.TB, dir string)) string {
	t.Helper()
	fixtures.Lock()
	if fixtures.m == nil {
		fixtures.m = map[string]*fixture{}
	}
	f := fixtures.m[name]
	if f == nil {
		f = &fixture{}
		fixtures.m[name] = f
	}
	fixtures.Unlock()
	f.once.Do(func() {
		dir, err := os.MkdirTemp("", "TestFixture-"+name+"-")
		if err != nil {
			t.Fatal(err)
		}
		f.dir = dir
		build(t, dir)
		f.ok = !t.Failed()
	})
	if !f.ok {
		t.Fatalf("the shared fixture %s could not be built (see the first test that asked for it)", name)
	}
	return f.dir
}

func removeFixtures() {
	fixtures.Lock()
	defer fixtures.Unlock()
	for _, f := range fixtures.m {
		if f.dir != "" {
			os.RemoveAll(f.dir)
		}
	}
}

// Copy copies the directory tree src to dst (files with their mode, a
// symlink as a symlink), for a test that changes its own copy of a
// Fixture. A root is copied whole, its -wal and -shm with it: SQLite
// rebuilds the -shm of a database no process has open.
func Copy(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			return os.MkdirAll(to, fi.Mode().Perm())
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s: neither a file, a directory nor a symlink", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}
