package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// period is a ledger with a period worth auditing: before it, alice holds
// db and a checkpoint is signed; in it, carol steals db from alice, bob
// forces web's release from dave, dave's steal is refused and a fence
// rejects a stale token; after it, one more acquisition and the end
// checkpoint.
type period struct {
	root         string
	vkey         string
	verifier     note.Verifier
	since, until time.Time
	bundle       []byte
	mid          []byte // a checkpoint signed inside the period
	start, end   int64
}

func makePeriod(t *testing.T) *period {
	t.Helper()
	ctx := context.Background()
	sk, vk, err := checkpoint.GenerateKey("ops")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := checkpoint.NewSigner(sk)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := checkpoint.NewVerifier(vk)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	clk := testclock.New(t0)
	p := &period{root: t.TempDir(), vkey: vk, verifier: verifier}
	l, err := ledger.Open(ctx, p.root, ledger.WithSigner(signer), ledger.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	step := func() { clk.Add(time.Second) }
	alice := ledger.Identity{Actor: "alice"}
	a, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "db", Identity: alice, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	alice.RequestID = a.RequestID
	step()
	bob := ledger.Identity{Actor: "bob"}
	b, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "web", Identity: bob, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	bob.RequestID = b.RequestID
	step()
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "web", Identity: bob, Result: events.ResultSuccess}); err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := l.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}

	p.since = clk.Add(time.Hour)
	step()
	if _, err := l.Heartbeat(ctx, "db", alice); err != nil {
		t.Fatal(err)
	}
	step()
	carol := ledger.Identity{Actor: "carol"}
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "db", Identity: carol, TTL: time.Hour, RecordBlocked: true}); err == nil {
		t.Fatal("carol acquired a held lock")
	}
	step()
	c, err := l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: "db", Identity: carol, TTL: time.Hour}, Active: true, Note: "alice's deploy hung"})
	if err != nil {
		t.Fatal(err)
	}
	carol.RequestID = c.RequestID
	step()
	if _, err := l.Steal(ctx, ledger.StealRequest{AcquireRequest: ledger.AcquireRequest{Lock: "db", Identity: ledger.Identity{Actor: "dave"}, TTL: time.Hour}}); err == nil {
		t.Fatal("dave stole an active lock without --active")
	}
	step()
	cp, err := l.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.mid = []byte(cp.Note)
	step()
	if err := l.RecordFenceRejected(ctx, "db", alice, events.FenceRejectedPayload{Fence: "file_write", Resource: "/srv/db/schema", StaleToken: 1, CurrentToken: c.FencingToken}); err != nil {
		t.Fatal(err)
	}
	step()
	dave := ledger.Identity{Actor: "dave"}
	d, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "web", Identity: dave, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "web", Identity: ledger.Identity{Actor: "bob"}, Force: true, Note: "dave left for the day"}); err != nil {
		t.Fatal(err)
	}
	_ = d
	step()
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "db", Identity: carol, Result: events.ResultSuccess}); err != nil {
		t.Fatal(err)
	}
	p.until = clk.Add(time.Second)

	clk.Add(time.Hour)
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "cache", Identity: ledger.Identity{Actor: "eve"}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := l.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err := l.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var buf bytes.Buffer
	m, err := Make(ctx, tx, Period{LedgerID: l.ID(), Since: p.since, Until: p.until, SignerKeys: []string{vk}, Now: clk.Now()}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	p.bundle, p.start, p.end = buf.Bytes(), m.Start, m.End
	return p
}

func (p *period) verify(t *testing.T, bundle []byte) *Result {
	t.Helper()
	res, err := Verify(bytes.NewReader(bundle), replay.Trust{Verifiers: []note.Verifier{p.verifier}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestBundleOfAPeriodVerifies(t *testing.T) {
	p := makePeriod(t)
	res := p.verify(t, p.bundle)
	if !res.OK {
		t.Fatalf("problems: %v\n%s", res.Problems, p.bundle)
	}
	if res.Start == nil || res.End == nil || res.Start.Size != p.start || res.End.Size != p.end {
		t.Fatalf("checkpoints %+v %+v, made %d %d", res.Start, res.End, p.start, p.end)
	}
	locks := map[string]LockSummary{}
	for _, l := range res.Summary.Locks {
		locks[l.Lock] = l
	}
	db, web := locks["db"], locks["web"]
	if len(db.Steals) != 1 || db.Steals[0].What != events.ReasonForcedActive || db.Steals[0].Actor != "carol" ||
		!strings.Contains(db.Steals[0].Detail, "alice's deploy hung") {
		t.Errorf("db's steals: %+v", db.Steals)
	}
	if len(db.Holdings) != 2 || !db.Holdings[0].BeforePeriod || db.Holdings[0].Actor != "alice" || db.Holdings[1].Actor != "carol" {
		t.Errorf("db's holdings: %+v", db.Holdings)
	}
	if db.Waits != 1 || len(db.Refusals) != 1 || db.Refusals[0].What != events.ActionSteal || len(db.FenceRejections) != 1 {
		t.Errorf("db: waits %d, refusals %+v, fence rejections %+v", db.Waits, db.Refusals, db.FenceRejections)
	}
	if len(web.ForcedReleases) != 1 || web.ForcedReleases[0].Actor != "bob" || !strings.Contains(web.ForcedReleases[0].Detail, "dave left for the day") {
		t.Errorf("web's forced releases: %+v", web.ForcedReleases)
	}
	if _, ok := locks["cache"]; ok {
		t.Errorf("cache, acquired after the period, is in its summary")
	}
	if len(res.Summary.Overlaps) != 0 || res.Summary.Exclusive != "no two exclusive holdings of a lock overlapped in the period" {
		t.Errorf("exclusive: %q %+v", res.Summary.Exclusive, res.Summary.Overlaps)
	}
}

// lines splits a bundle into its lines (without newlines).
func lines(b []byte) []string { return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") }

func join(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

// eventLine is the index of the event line of seq, or of the first event
// line of type typ when seq is 0.
func eventLine(t *testing.T, ls []string, seq int64, typ events.Type) int {
	t.Helper()
	for i, l := range ls {
		var e struct {
			Seq  int64 `json:"seq"`
			Body struct {
				Type events.Type `json:"type"`
			} `json:"body"`
		}
		if json.Unmarshal([]byte(l), &e) != nil || e.Seq == 0 {
			continue
		}
		if (seq != 0 && e.Seq == seq) || (seq == 0 && e.Body.Type == typ) {
			return i
		}
	}
	t.Fatalf("no event line of seq %d / type %s", seq, typ)
	return -1
}

// rechain recomputes every event line's prev_hash and hash from line i
// on, as a forger who edits an event and covers the chain would.
func rechain(t *testing.T, ls []string, i int) {
	t.Helper()
	prev := ""
	for j := i; j < len(ls); j++ {
		var e struct {
			Seq      int64           `json:"seq"`
			PrevHash string          `json:"prev_hash"`
			Body     json.RawMessage `json:"body"`
		}
		if json.Unmarshal([]byte(ls[j]), &e) != nil || e.Seq == 0 {
			continue
		}
		if prev == "" {
			prev = e.PrevHash
		}
		body, err := events.Canonical(e.Body)
		if err != nil {
			t.Fatal(err)
		}
		h := events.ChainHash(e.Seq, prev, body)
		b, _ := json.Marshal(map[string]any{"seq": e.Seq, "prev_hash": prev, "hash": h, "body": json.RawMessage(body)})
		ls[j], prev = string(b), h
	}
}

// tampered are the copies of a good bundle that must fail every verifier.
func (p *period) tampered(t *testing.T) map[string][]byte {
	t.Helper()
	ls := lines(p.bundle)
	out := map[string][]byte{}
	edit := func(name string, f func(ls []string) []string) {
		out[name] = join(f(append([]string(nil), ls...)))
	}
	edit("an event dropped", func(ls []string) []string {
		i := eventLine(t, ls, 0, events.FenceRejected)
		return append(ls[:i], ls[i+1:]...)
	})
	edit("an event dropped, the chain redone", func(ls []string) []string {
		i := eventLine(t, ls, 0, events.FenceRejected)
		ls = append(ls[:i], ls[i+1:]...)
		rechain(t, ls, i-1)
		return ls
	})
	edit("the steal dropped", func(ls []string) []string {
		i := eventLine(t, ls, 0, events.LockStolen)
		return append(ls[:i], ls[i+1:]...)
	})
	edit("a reason edited", func(ls []string) []string {
		i := eventLine(t, ls, 0, events.LockStolen)
		ls[i] = strings.Replace(ls[i], `"reason":"`+events.ReasonForcedActive+`"`, `"reason":"`+events.ReasonHolderDead+`"`, 1)
		return ls
	})
	edit("a reason edited, the chain redone", func(ls []string) []string {
		i := eventLine(t, ls, 0, events.LockStolen)
		ls[i] = strings.Replace(ls[i], `"reason":"`+events.ReasonForcedActive+`"`, `"reason":"`+events.ReasonHolderDead+`"`, 1)
		rechain(t, ls, i)
		return ls
	})
	edit("the end checkpoint replaced by an older one", func(ls []string) []string {
		for i, l := range ls {
			if strings.HasPrefix(l, `{"end":`) {
				b, _ := json.Marshal(map[string]string{"end": string(p.mid)})
				ls[i] = string(b)
			}
		}
		return ls
	})
	edit("the bundle cut to end early", func(ls []string) []string {
		return ls[:eventLine(t, ls, 0, events.FenceRejected)]
	})
	edit("the bundle cut to end early, its header redone", func(ls []string) []string {
		i := eventLine(t, ls, 0, events.FenceRejected)
		var h struct {
			Evidence Header `json:"evidence"`
		}
		if err := json.Unmarshal([]byte(ls[0]), &h); err != nil {
			t.Fatal(err)
		}
		var e struct {
			Seq int64 `json:"seq"`
		}
		_ = json.Unmarshal([]byte(ls[i-1]), &e)
		h.Evidence.LastSeq = e.Seq
		h.Evidence.Events = e.Seq - h.Evidence.FirstSeq + 1
		b, _ := json.Marshal(h)
		ls[0] = string(b)
		return append(ls[:i], ls[len(ls)-1]) // keeps the summary line
	})
	return out
}

func TestTamperedBundlesFail(t *testing.T) {
	p := makePeriod(t)
	for name, b := range p.tampered(t) {
		if res := p.verify(t, b); res.OK {
			t.Errorf("%s: verified", name)
		} else {
			t.Logf("%s: %v", name, res.Problems[0])
		}
	}
}

// TestIndependentVerifier runs the verifier written from docs/evidence.md
// alone, in Python with only its standard library, on the good bundle and
// on each tampered copy: one process for them all (a Python's start costs
// more than its checks of a bundle this size).
func TestIndependentVerifier(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		// As clitest.NeedBinary does, which this package cannot import.
		if os.Getenv("LOCKLEDGER_CI") == "1" {
			t.Fatal("python3 is not installed, and CI requires every test to run")
		}
		t.Skip("SKIPPED: python3 is not installed, so this test cannot run here (CI installs it)")
	}
	p := makePeriod(t)
	dir := t.TempDir()
	bundles := map[string][]byte{"good": p.bundle}
	for name, b := range p.tampered(t) {
		bundles[name] = b
	}
	args := []string{"testdata/verify_evidence.py", "--verifier-key", p.vkey}
	files := map[string]string{} // bundle name by file
	for name, b := range bundles {
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".jsonl")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		args, files[f] = append(args, f), name
	}
	out, err := exec.Command(py, args...).CombinedOutput()
	if _, isExit := err.(*exec.ExitError); err == nil || !isExit {
		t.Fatalf("the verifier exits %v on bundles some of which are tampered:\n%s", err, out)
	}
	verdicts := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f, verdict, _ := strings.Cut(line, ": ")
		if name, ok := files[f]; ok {
			verdicts[name] = verdict
		}
	}
	for name := range bundles {
		switch v := verdicts[name]; {
		case name == "good" && !strings.HasPrefix(v, "OK: "):
			t.Errorf("the good bundle fails: %q\n%s", v, out)
		case name != "good" && !strings.HasPrefix(v, "FAILED: "):
			t.Errorf("%s: the independent verifier says %q:\n%s", name, v, out)
		}
	}
}
