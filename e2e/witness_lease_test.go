package e2e

// A witness off the machine that is slow or dead delays nothing a holder
// needs: the cosign requests are made after the commit, off the lease's
// clock, and verify --witness-key names the checkpoints a witness did not
// cosign.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/testwitness"
)

// TestRunOutlivesItsTTLWhileAWitnessNeverAnswers: run with a TTL of 6 s,
// a checkpoint signed on every write (each heartbeat) and a witness that
// never answers: the job, longer than the TTL, runs to its end, run
// exits 0, and the lock was never lost. The witness got the requests;
// run says it did not cosign.
func TestRunOutlivesItsTTLWhileAWitnessNeverAnswers(t *testing.T) {
	t.Parallel()
	s := newSignedRoot(t)
	clitest.Race(t, s.root)
	w := testwitness.StartSilent(t)
	c := clitest.Command(context.Background(), s.root, "--signing-key", s.key, "--witness-url", w.URL+"="+otherWitnessKey(t),
		"--checkpoint-every", "1", "run", "deploy", "--ttl", "6s", "--", "sh", "-c", "echo started; sleep 8; echo done")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	lines := make(chan string, 4)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	code := exitOf(t, c)
	var printed []string
	for l := range lines {
		printed = append(printed, l)
	}
	if code != 0 || strings.Join(printed, " ") != "started done" {
		t.Fatalf("run --ttl 6s of an 8 s job with a witness that never answers: exit %d, the job printed %q (want 0 and \"started done\")\n%s",
			code, printed, stderr.String())
	}
	got := clitest.Strings(t, s.root, `SELECT type FROM events WHERE lock_name = 'deploy' ORDER BY seq`)
	if len(got) < 5 || got[0] != "lock_acquired" || got[len(got)-1] != "lock_released" ||
		slices.ContainsFunc(got[1:len(got)-1], func(ty string) bool { return ty != "lock_heartbeat" }) {
		t.Fatalf("events of the lock %v: want it acquired, 3 or more heartbeats and nothing else, released", got)
	}
	if w.Accepted() == 0 || !strings.Contains(stderr.String(), "did not cosign") {
		t.Fatalf("the witness got %d requests; run's stderr does not say it did not cosign:\n%s", w.Accepted(), stderr.String())
	}
}

// newCosignedRoot is newSignedRoot whose last checkpoint (of size 9)
// litewitness cosigned.
func newCosignedRoot(t *testing.T) (*liteWitness, *signedRoot) {
	t.Helper()
	w := startLitewitness(t)
	s := newSignedRoot(t)
	id := clitest.Strings(t, s.root, `SELECT value FROM meta WHERE key = 'ledger_id'`)[0]
	w.register(t, "lockledger/"+id, s.vkey)
	clitest.Must(t, 0, s.root, "--signing-key", s.key, "--witness-url", w.url+"="+w.vkey, "checkpoint")
	return w, s
}

// TestVerifyWitnessKeyNamesTheCheckpointsAWitnessDidNotCosign: litewitness
// cosigns the ledger's checkpoints, then is down (its address answers
// every request 503 at once; a witness that hangs until the timeout is
// TestRunOutlivesItsTTLWhileAWitnessNeverAnswers's) while writers sign two
// more: verify --witness-key still passes (the witness vouches for what it
// cosigned) and names the witness and the two checkpoints it did not
// cosign.
func TestVerifyWitnessKeyNamesTheCheckpointsAWitnessDidNotCosign(t *testing.T) {
	t.Parallel()
	w, s := newCosignedRoot(t)
	if got := strings.Join(cosignedSizes(t, s.root), " "); got != "9" {
		t.Fatalf("cosigned sizes %q, want 9", got)
	}
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the witness is down", http.StatusServiceUnavailable)
	}))
	defer dead.Close()
	pid := strconv.Itoa(os.Getpid())
	for _, args := range [][]string{
		{"acquire", "web", "--actor", "gina", "--request-id", "g1", "--pid", pid},
		{"release", "web", "--request-id", "g1"},
	} {
		r := clitest.Must(t, 0, s.root, append([]string{"--signing-key", s.key, "--witness-url", dead.URL + "=" + w.vkey, "--checkpoint-every", "1"}, args...)...)
		if !strings.Contains(r.Stderr, "did not cosign") {
			t.Fatalf("%s with a witness that never answers: stderr does not say it did not cosign:\n%s", args[0], r.Stderr)
		}
	}
	v := clitest.Verify(t, 0, s.root, "--witness-key", w.vkey)
	if len(v.Uncosigned) != 1 || v.Uncosigned[0].Witness != "example.com/lockledger-test" || v.Uncosigned[0].Cosigned != 9 ||
		fmt.Sprint(v.Uncosigned[0].Sizes) != "[10 11]" {
		t.Fatalf("verify --witness-key: uncosigned %+v, want example.com/lockledger-test: 10 11, its last cosignature of size 9", v.Uncosigned)
	}
	text := clitest.Must(t, 0, s.root, "verify", "--witness-key", w.vkey).Stdout
	if !strings.Contains(text, "witness example.com/lockledger-test did not cosign 2 checkpoints of this ledger (size 10, 11)") {
		t.Fatalf("verify --witness-key does not name the checkpoints the witness did not cosign:\n%s", text)
	}
}
