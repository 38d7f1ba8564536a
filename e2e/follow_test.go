package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ckpt "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/stream"
)

// underRecheck bounds the wait for a record the follower must be woken
// for: well under stream.DefaultRecheck, so that only a wake delivers it.
const underRecheck = stream.DefaultRecheck * 2 / 3

// verifierKey is the key the writers of root sign with (the test's trust store).
func verifierKey(t *testing.T, root string) string {
	t.Helper()
	var show struct {
		VerifierKey string `json:"verifier_key"`
	}
	if err := json.Unmarshal([]byte(clitest.Must(t, 0, root, "trust", "show", "--json").Stdout), &show); err != nil || show.VerifierKey == "" {
		t.Fatalf("trust show --json: no verifier key (%v)", err)
	}
	return show.VerifierKey
}

func TestFollowKilledAndResumedUnderConcurrentWritersLosesAndRepeatsNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Race(t, root)
	clitest.Must(t, 0, root, "run", "seed", "--", "true")
	// Writers sign every 10 events; followers write a checkpoint record
	// at least every 3.
	every := []string{"LOCKLEDGER_CHECKPOINT_EVERY=10"}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	writers := func(phase string, n, runs int) {
		for w := range n {
			wg.Go(func() {
				for i := range runs {
					// The race detector is for the followers: the writers
					// are the CLI as users run it, at a quarter of the CPU.
					c := exec.CommandContext(t.Context(), clitest.Bin(), "run", fmt.Sprintf("%s%d-%d", phase, w, i), "--", "true")
					c.Env = clitest.Env(root, every...)
					r, err := clitest.Output(c)
					if err != nil || r.Code != 0 {
						errs <- fmt.Sprintf("writer %s%d: %v exit %d: %s", phase, w, err, r.Code, r.Stderr)
					}
				}
			})
		}
	}

	first := startFollower(t, root, nil, "export", "--follow", "--checkpoint-every", "3")
	writers("a", 3, 10)
	first.await(t, "seq 8", hasSeq(8))
	_, got := first.stop(t, syscall.SIGKILL)
	if len(got) == 0 {
		t.Fatal("the first follower wrote nothing")
	}
	firstLines := parseStream(t, got)
	last := lastEventSeq(firstLines)
	// The writers go on meanwhile: the second follower starts behind, and
	// then follows more writers.
	wg.Wait()
	second := startFollower(t, root, nil, "export", "--follow", "--checkpoint-every", "3", "--after-seq", strconv.FormatInt(last, 10))
	writers("b", 2, 5)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	hashes := clitest.Strings(t, root, `SELECT hash FROM events ORDER BY seq`)
	head := int64(len(hashes))
	t.Logf("the first follower was killed after seq %d; the ledger holds %d events", last, head)
	if last >= head {
		t.Fatalf("the first follower was killed after seq %d, the last: not mid-stream", last)
	}
	second.await(t, fmt.Sprintf("seq %d", head), hasSeq(head))
	code, more := second.stop(t, syscall.SIGTERM)
	if code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0; stderr:\n%s", code, second.errText())
	}

	// --checkpoint-every 3: never more than 3 events without a checkpoint
	// record, once the first is written.
	for run, lines := range [][]string{got, more} {
		gap := -1
		for _, l := range parseStream(t, lines) {
			switch {
			case l.Checkpoint != nil:
				gap = 0
			case l.Seq != nil && gap >= 0:
				if gap++; gap > 3 {
					t.Errorf("follower %d: seq %d is the %dth event since the last checkpoint record", run+1, *l.Seq, gap)
				}
			}
		}
	}

	all := append(got, more...)
	seen := map[int64]int{}
	checkpoints := 0
	for i, l := range parseStream(t, all) {
		switch {
		case l.Checkpoint != nil:
			checkpoints++
		case l.Seq != nil:
			seen[*l.Seq]++
			if *l.Seq <= head && l.Hash != hashes[*l.Seq-1] {
				t.Errorf("line %d: seq %d has hash %s, the ledger's is %s", i+1, *l.Seq, l.Hash, hashes[*l.Seq-1])
			}
			body, err := events.Canonical(l.Body)
			if err != nil || l.Leaf != ckpt.LeafHash(body).String() {
				t.Errorf("line %d: leaf %q is not the body's Merkle leaf (%v)", i+1, l.Leaf, err)
			}
		}
	}
	for seq := int64(1); seq <= head; seq++ {
		if seen[seq] != 1 {
			t.Errorf("seq %d received %d times, want once (the first follower ended at %d)", seq, seen[seq], last)
		}
	}
	if len(seen) != int(head) {
		t.Errorf("received %d distinct seqs, the ledger holds %d", len(seen), head)
	}
	if checkpoints == 0 {
		t.Error("the streams carried no checkpoint")
	}

	file := filepath.Join(t.TempDir(), "stream.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(all, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := clitest.Verify(t, 0, root, "--file", file, "--verifier-key", verifierKey(t, root))
	matched := 0
	for _, c := range rep.Checkpoints {
		switch c.Result {
		case "matches":
			matched++
		case "does not match", "invalid", "beyond the log":
			t.Errorf("checkpoint %s: %s %s", c.Source, c.Result, c.Detail)
		}
	}
	if !rep.OK || rep.Events != head || matched == 0 {
		t.Errorf("verify --file of the two streams: ok %v, %d events (want %d), %d checkpoints matched; trust %q, problems %+v",
			rep.OK, rep.Events, head, matched, rep.Trust, rep.Problems)
	}
}

func TestFollowCloudEventsFieldByField(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "ce-lock", "--actor", "ci", "-q")
	f := startFollower(t, root, nil, "export", "--follow", "--format", "cloudevents")
	f.await(t, "the first event", func(lines []string) bool { return len(lines) >= 1 })
	// Woken for the next append, well before the safety re-read.
	clitest.Must(t, 0, root, "acquire", "ce-other", "--actor", "ci", "-q")
	f.awaitWithin(t, underRecheck, "the event appended while following", func(lines []string) bool {
		return strings.Contains(strings.Join(lines, "\n"), `"lockledgerseq":"2"`)
	})
	code, lines := f.stop(t, syscall.SIGINT)
	if code != 0 {
		t.Fatalf("SIGINT: exit %d, want 0; stderr:\n%s", code, f.errText())
	}
	ids := clitest.Strings(t, root, `SELECT event_id FROM events ORDER BY seq`)
	bodies := clitest.Strings(t, root, `SELECT body FROM events ORDER BY seq`)
	ledgerID := clitest.Strings(t, root, `SELECT value FROM meta WHERE key = 'ledger_id'`)[0]
	var evs, cps int
	for i, line := range lines {
		var ce map[string]any
		if err := json.Unmarshal([]byte(line), &ce); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		if ce["specversion"] != "1.0" || ce["source"] != "lockledger:"+ledgerID || ce["datacontenttype"] != "application/json" {
			t.Errorf("line %d: specversion %v, source %v, datacontenttype %v", i+1, ce["specversion"], ce["source"], ce["datacontenttype"])
		}
		if ce["type"] == "dev.lockledger.checkpoint" {
			cps++
			continue
		}
		evs++
		seq, err := strconv.ParseInt(ce["lockledgerseq"].(string), 10, 64)
		if err != nil || seq < 1 || seq > int64(len(ids)) {
			t.Fatalf("line %d: lockledgerseq %v", i+1, ce["lockledgerseq"])
		}
		body := []byte(bodies[seq-1])
		var env events.Envelope
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		at, _ := events.ParseTime(env.At)
		ct, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ce["time"]))
		var raw struct {
			Data json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal([]byte(line), &raw)
		canon, cerr := events.Canonical(raw.Data)
		for _, c := range []struct {
			name      string
			got, want any
		}{
			{"id", ce["id"], ids[seq-1]},
			{"type", ce["type"], "dev.lockledger." + string(env.Type)},
			{"sequence", ce["sequence"], fmt.Sprintf("%019d", seq)},
			{"lockledgerleaf", ce["lockledgerleaf"], ckpt.LeafHash(body).String()},
			{"time", err == nil && ct.Equal(at), true},
			{"data", cerr == nil && string(canon) == string(body), true},
		} {
			if c.got != c.want {
				t.Errorf("line %d (seq %d): %s = %v, want %v", i+1, seq, c.name, c.got, c.want)
			}
		}
	}
	if evs != 2 || cps == 0 {
		t.Errorf("%d event records and %d checkpoint records, want 2 and at least 1:\n%s", evs, cps, strings.Join(lines, "\n"))
	}
}

func TestFollowIsARead(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nothing-here")
	r := clitest.Run(t, missing, "export", "--follow")
	if r.Code != 6 {
		t.Errorf("export --follow of a root with no ledger: exit %d, want 6\nstderr: %s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("export --follow created the root (%v)", err)
	}

	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "one", "-q")
	before := clitest.EventCount(t, root)
	for _, args := range [][]string{
		{"export", "--follow", "--after-seq", "99"},
		{"export", "--follow", "--after-seq", "-1"},
		{"export", "--follow", "--format", "csv"},
		{"export", "--follow", "-o", filepath.Join(t.TempDir(), "out")},
		{"export", "--format", "syslog"},
		{"export", "--after-seq", "1"},
	} {
		r := clitest.Run(t, root, args...)
		flag := args[len(args)-2]
		if r.Code != 2 || !strings.Contains(r.Stderr, flag) {
			t.Errorf("lockledger %s: exit %d, want 2 naming %s\nstderr: %s", strings.Join(args, " "), r.Code, flag, r.Stderr)
		}
	}
	if after := clitest.EventCount(t, root); after != before {
		t.Errorf("refused follows changed the ledger: %d events, were %d", after, before)
	}
}

// A root the follower cannot write is read by SQLite as a file no one
// writes, which never shows a later commit: the follower refuses it
// rather than follow a snapshot forever.
func TestFollowRefusesARootItWouldReadAsImmutable(t *testing.T) {
	t.Parallel()
	asUser, base := asReader(t)
	root := readerRoot(t, base, "ro", "acquire", "held", "-q")
	checkpoint(t, root)
	setTreeMode(t, root, 0o500, 0o400)
	t.Cleanup(func() { setTreeMode(t, root, 0o700, 0o600) })
	if r := asUser(root, "export"); r.Code != 0 {
		t.Fatalf("export of the read-only root: exit %d\nstderr: %s", r.Code, r.Stderr)
	}
	r := asUser(root, "export", "--follow")
	if r.Code != 1 || !strings.Contains(r.Stderr, "later commits cannot be seen") {
		t.Errorf("export --follow of a root read as immutable: exit %d, want 1 saying why\nstderr: %s", r.Code, r.Stderr)
	}
}
