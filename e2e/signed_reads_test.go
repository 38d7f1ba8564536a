package e2e

// Reads of a signed ledger: verify and export record themselves
// (ledger_verified, ledger_exported) without the signing key, and the
// signer's promise of its next checkpoint is about the writers' events.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/replay"
)

// TestUntouchedSignedLedgerVerifiesAfterManyReads: 20 verifies and
// exports, spread over more than the checkpoint interval plus the clock
// skew, each recorded without the key: every verify with the key and the
// witness says OK. A lock event appended without the key afterwards is
// still held to the promise.
func TestUntouchedSignedLedgerVerifiesAfterManyReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, key, witness := filepath.Join(dir, "root"), filepath.Join(dir, "signing.key"), filepath.Join(dir, "ledger.checkpoints")
	clitest.Unsigned(t, root)
	vkey := strings.TrimSpace(clitest.Must(t, 0, root, "keygen", "--name", "ops", "-o", key).Stdout)
	const interval = time.Second
	pid := strconv.Itoa(os.Getpid())
	for _, args := range [][]string{
		{"acquire", "app", "--request-id", "a1", "--pid", pid},
		{"release", "app", "--request-id", "a1"},
		{"acquire", "db", "--request-id", "b1", "--pid", pid},
	} {
		clitest.Must(t, 0, root, append([]string{"--signing-key", key, "--witness", witness, "--checkpoint-interval", interval.String()}, args...)...)
	}
	check := []string{"--verifier-key", vkey, "--witness", witness}
	// The reads end well past the promise of the last checkpoint: its
	// interval and the skew verify allows.
	const reads = 20
	span := interval + replay.DefaultClockSkew + time.Second
	start := time.Now()
	for i := range reads {
		time.Sleep(time.Until(start.Add(span * time.Duration(i) / (reads - 1))))
		if i%2 == 1 {
			clitest.Must(t, 0, root, "export", "-o", filepath.Join(dir, fmt.Sprintf("export-%d.jsonl", i)))
			continue
		}
		if v := clitest.Verify(t, 0, root, check...); !v.OK {
			t.Fatalf("verify %d of an untouched ledger: %+v", i, v.Problems)
		}
	}
	if v := clitest.Verify(t, 0, root, check...); !v.OK || !strings.Contains(v.Trust, "match") {
		t.Fatalf("verify after %d reads of an untouched ledger: trust %q, %+v", reads, v.Trust, v.Problems)
	}
	// A lock event by a writer without the key, past the promise.
	clitest.Must(t, 0, root, "release", "db", "--request-id", "b1")
	v := clitest.Verify(t, 1, root, check...)
	last := int64(clitest.EventCount(t, root)) - 1 // the verify itself is the last
	found := false
	for _, p := range v.Problems {
		found = found || p.Kind == "checkpoint" && p.Seq == last && strings.Contains(p.Detail, "covered by no checkpoint")
	}
	if !found {
		t.Fatalf("the release appended without the key at seq %d is not named: %+v", last, v.Problems)
	}
}
