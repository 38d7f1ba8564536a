package e2e

// A witness that is not on the machine: filippo.io/torchwood's
// litewitness, a real C2SP tlog-witness, cosigns the ledger's checkpoints;
// a ledger rewritten under it is refused by the witness, and verify names
// the split view from the cosignatures the ledger kept.

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// litewitnessBin finds litewitness on PATH, else where go install puts it
// (GOBIN, GOPATH/bin); it skips loudly, or fails under CI, without it.
func litewitnessBin(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("litewitness"); err == nil {
		return p
	}
	var dirs []string
	if b, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") // GOBIN's line may be empty
		if len(lines) == 2 {
			dirs = append(dirs, lines[0])
			for _, p := range filepath.SplitList(lines[1]) {
				dirs = append(dirs, filepath.Join(p, "bin"))
			}
		}
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "litewitness"); d != "" && isExecutable(p) {
			return p
		}
	}
	if os.Getenv("LOCKLEDGER_CI") == "1" {
		t.Fatalf("litewitness is not installed (looked on PATH and in %q), and CI requires every test to run", dirs)
	}
	t.Skipf("SKIPPED: litewitness is not installed (go install filippo.io/torchwood/cmd/litewitness@v0.6.1), so this test cannot run here (CI installs it)")
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// liteWitness is a running litewitness, its key in a throwaway ssh-agent.
type liteWitness struct {
	url, vkey, db string
}

// startLitewitness starts an ssh-agent holding a new Ed25519 key and a
// litewitness signing with it on a free local port; both stop with the
// test.
func startLitewitness(t *testing.T) *liteWitness {
	t.Helper()
	bin := litewitnessBin(t)
	clitest.NeedBinary(t, "ssh-agent", "ssh-keygen", "ssh-add")
	// A unix socket path must be short: not under t.TempDir()'s long name.
	dir, err := os.MkdirTemp("", "lw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	awaitCondition(t, "ssh-agent's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	key := filepath.Join(dir, "witness")
	run(t, nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "witness", "-f", key)
	run(t, []string{"SSH_AUTH_SOCK=" + sock}, "ssh-add", "-q", key)
	fp := strings.Fields(run(t, nil, "ssh-keygen", "-l", "-E", "sha256", "-f", key+".pub"))[1]

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	w := &liteWitness{url: "http://" + addr, db: filepath.Join(dir, "litewitness.db")}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-ssh-agent", sock, "-key", fp, "-name", "example.com/lockledger-test", "-db", w.db, "-listen", addr)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// litewitness logs its verifier key when it starts: the key verify is
	// given is the one the real witness prints.
	vkey := make(chan string, 1)
	logged := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if _, v, ok := strings.Cut(sc.Text(), "vkey="); ok {
				select {
				case vkey <- strings.Fields(v)[0]:
				default:
				}
			}
		}
		logged <- all.String()
	}()
	var said string
	read := false
	t.Cleanup(func() {
		cancel()
		if !read {
			said = <-logged // the reader ends when litewitness does
		}
		cmd.Wait()
		if t.Failed() {
			t.Logf("litewitness said:\n%s", said)
		}
	})
	select {
	case w.vkey = <-vkey:
	case said = <-logged:
		read = true
		t.Fatalf("litewitness exited without printing its verifier key:\n%s", said)
	case <-time.After(30 * time.Second):
		t.Fatal("litewitness printed no verifier key in 30s")
	}
	awaitCondition(t, "litewitness listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return w
}

// awaitCondition polls cond until it holds, for at most 30s.
func awaitCondition(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s", what)
		}
	}
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	c := exec.Command(name, args...)
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// register adds the log origin, checked with vkey, to the witness, as
// its witnessctl add-log and add-key do (witnessctl does not build here):
// a new log starts at size 0 and the empty tree's hash.
func (w *liteWitness) register(t *testing.T, origin, vkey string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+w.db+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	empty := sha256.Sum256(nil)
	if _, err := db.Exec(`INSERT INTO log (origin, tree_size, tree_hash) VALUES (?, 0, ?)`, origin, base64.StdEncoding.EncodeToString(empty[:])); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO key (origin, key) VALUES (?, ?)`, origin, vkey); err != nil {
		t.Fatal(err)
	}
}

// size is the tree size the witness holds for origin.
func (w *liteWitness) size(t *testing.T, origin string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+w.db+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`SELECT tree_size FROM log WHERE origin = ?`, origin).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// otherWitnessKey is a cosignature/v1 verifier key of a witness that
// never saw the ledger.
func otherWitnessKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	name := "example.com/elsewhere"
	key := append([]byte{4}, pub...)
	h := sha256.Sum256(append([]byte(name+"\n"), key...))
	return fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(h[:4]), base64.StdEncoding.EncodeToString(key))
}

func cosignedSizes(t *testing.T, root string) []string {
	t.Helper()
	return clitest.Strings(t, root, `SELECT size FROM cosignatures ORDER BY id`)
}

// TestLitewitnessCosignsAndRefusesARewrittenLedger: litewitness cosigns
// the checkpoints of a signed ledger (the first from nothing, the next
// with consistency proofs, one of a size it has); verify checks the
// cosignatures with its key. Then the ledger is re-chained (one copy) or
// cut (another), and a writer that knows nothing of what was signed
// before signs it: the witness refuses, the writer says so (exit 1 for
// checkpoint, an error logged after an automatic one), nothing is stored,
// and verify names the split view.
func TestLitewitnessCosignsAndRefusesARewrittenLedger(t *testing.T) {
	t.Parallel()
	w := startLitewitness(t)
	s := newSignedRoot(t)
	clitest.Race(t, s.root)
	id := clitest.Strings(t, s.root, `SELECT value FROM meta WHERE key = 'ledger_id'`)[0]
	origin := "lockledger/" + id
	w.register(t, origin, s.vkey)
	pid := strconv.Itoa(os.Getpid())
	// A writer with the key and the witness, no file witness: what it
	// knows of earlier checkpoints is the cosignatures the ledger keeps.
	cosigning := func(args ...string) []string {
		return append([]string{"--signing-key", s.key, "--witness-url", w.url + "=" + w.vkey, "--checkpoint-every", "1"}, args...)
	}
	r := clitest.Must(t, 0, s.root, cosigning("checkpoint", "--json")...)
	if !strings.Contains(r.Stdout, `"cosigned":["`+w.url+`"]`) {
		t.Fatalf("checkpoint --json does not name the witness that cosigned:\n%s", r.Stdout)
	}
	clitest.Must(t, 0, s.root, cosigning("acquire", "web", "--actor", "gina", "--request-id", "g1", "--pid", pid)...)
	clitest.Must(t, 0, s.root, cosigning("release", "web", "--request-id", "g1")...)
	clitest.Must(t, 0, s.root, cosigning("checkpoint")...)
	if got := strings.Join(cosignedSizes(t, s.root), " "); got != "9 10 11 11" || w.size(t, origin) != 11 {
		t.Fatalf("cosigned sizes %q, the witness holds %d; want 9 10 11 11, and 11", got, w.size(t, origin))
	}
	v := clitest.Verify(t, 0, s.root, "--witness-key", w.vkey)
	if !strings.Contains(v.Trust, "example.com/lockledger-test cosigned") {
		t.Fatalf("verify --witness-key: trust %q, want the witness's cosignature named", v.Trust)
	}
	clitest.Verify(t, 0, s.root, "--witness-key", w.vkey, "--verifier-key", s.vkey)
	// A second witness key that cosigned nothing: below the quorum of all,
	// enough with a quorum of one.
	other := otherWitnessKey(t)
	mustName(t, clitest.Verify(t, 1, s.root, "--witness-key", w.vkey, "--witness-key", other), 1, "only 1 of the 2 witness keys", "size 11")
	clitest.Verify(t, 0, s.root, "--witness-key", w.vkey, "--witness-key", other, "--witness-quorum", "1")
	// An export carries the cosignatures: verify --file checks them alone.
	exported := filepath.Join(t.TempDir(), "audit.jsonl")
	clitest.Must(t, 0, s.root, "export", "-o", exported)
	clitest.Verify(t, 0, s.root, "--file", exported, "--witness-key", w.vkey)
	mustName(t, clitest.Verify(t, 1, s.root, "--file", exported, "--witness-key", other), 1, "no cosignature by the witness keys given")

	cut := s.clone(t)
	a := attack(t, s.root)
	a.rechain(t, func(bs []body) []body { bs[4]["actor"] = "mallory"; return bs })
	a.restore(t)
	clitest.Must(t, 0, s.root, "project", "--accept-broken-chain")
	refused := func(root string, args ...string) {
		t.Helper()
		rows := len(cosignedSizes(t, root))
		r := clitest.Run(t, root, cosigning(args...)...)
		if want := map[bool]int{true: 1, false: 0}[args[0] == "checkpoint"]; r.Code != want ||
			!strings.Contains(r.Stderr, "example.com/lockledger-test") || !strings.Contains(r.Stderr, "refused") {
			t.Fatalf("%s on a rewritten ledger: exit %d (want %d), stderr not saying the witness refused:\n%s", args[0], r.Code, want, r.Stderr)
		}
		if n := len(cosignedSizes(t, root)); n != rows {
			t.Fatalf("a refused checkpoint stored %d cosignatures", n-rows)
		}
		if n := w.size(t, origin); n != 11 {
			t.Fatalf("the witness moved to size %d", n)
		}
	}
	refused(s.root, "acquire", "next", "--actor", "frank", "--pid", pid)
	refused(s.root, "checkpoint")
	v = clitest.Verify(t, 1, s.root, "--witness-key", w.vkey)
	mustName(t, v, 1, "the checkpoint of size 9 that witness example.com/lockledger-test cosigned", "split view", "the first 9 events hash to", "the checkpoint's root is")
	clitest.Must(t, 0, s.root, "export", "-o", exported+".rewritten")
	mustName(t, clitest.Verify(t, 1, s.root, "--file", exported+".rewritten", "--witness-key", w.vkey), 1,
		"the checkpoint of size 11 that witness example.com/lockledger-test cosigned", "split view")

	// The tail cut, and every trace of it removed: the cosignatures too.
	a = attack(t, cut.root)
	for _, q := range []string{`DELETE FROM events WHERE seq > 6`, `DELETE FROM tlog_hashes WHERE seq > 6`, `DELETE FROM checkpoints`,
		`DELETE FROM cosignatures`, `DELETE FROM locks WHERE lock_name IN ('app', 'cache', 'web')`,
		`DELETE FROM lock_holders WHERE lock_name IN ('app', 'cache', 'web')`} {
		a.exec(t, q)
	}
	a.restore(t)
	for _, f := range []string{"app.lock", "cache.lock"} {
		if err := os.Remove(filepath.Join(cut.root, "locks", f)); err != nil {
			t.Fatal(err)
		}
	}
	clitest.Must(t, 0, cut.root, "project")
	refused(cut.root, "checkpoint")
	mustName(t, clitest.Verify(t, 1, cut.root, "--witness-key", w.vkey), 1, "no cosignature by the witness keys given")
}

// TestWitnessFlagsRefuseBadInput: exit 2 naming the flag and the rule,
// the ledger unchanged.
func TestWitnessFlagsRefuseBadInput(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	before := snapLedger(t, s.root)
	inRoot := filepath.Join(s.root, "witness.vkey")
	writeFile(t, inRoot, otherWitnessKey(t)+"\n")
	pid := strconv.Itoa(os.Getpid())
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--signing-key", s.key, "--witness-url", "http://127.0.0.1:1", "acquire", "x", "--pid", pid}, "--witness-url"},
		{[]string{"--signing-key", s.key, "--witness-url", "127.0.0.1:1=" + otherWitnessKey(t), "acquire", "x", "--pid", pid}, "http or https URL"},
		{[]string{"--signing-key", s.key, "--witness-url", "http://127.0.0.1:1=" + s.vkey, "acquire", "x", "--pid", pid}, "not a witness verifier key"},
		{[]string{"--witness-url", "http://127.0.0.1:1=" + otherWitnessKey(t), "acquire", "x", "--pid", pid}, "needs signed checkpoints"},
		{[]string{"verify", "--witness-key", s.vkey}, "--witness-key"},
		{[]string{"verify", "--witness-key", inRoot}, "is inside the root"},
		{[]string{"verify", "--witness-key", otherWitnessKey(t), "--witness-quorum", "2"}, "--witness-quorum"},
		{[]string{"verify", "--witness-key", otherWitnessKey(t), "--witness-quorum", "0"}, "--witness-quorum"},
	} {
		r := clitest.Run(t, s.root, c.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.says) {
			t.Errorf("lockledger %s: exit %d, want 2 saying %q\n%s", strings.Join(c.args, " "), r.Code, c.says, r.Stderr)
		}
	}
	if after := snapLedger(t, s.root); after.events != before.events || after.head != before.head {
		t.Fatalf("bad input changed the ledger: %s, was %s", after, before)
	}
}
