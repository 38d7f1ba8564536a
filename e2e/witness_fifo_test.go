package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestAWitnessThatIsAFIFOBlocksNoWriter: a witness nobody reads (a FIFO,
// as a stalled mount would be) neither hangs the writer that signs a
// checkpoint nor, through the writer lock, any other writer: the lock
// is taken, the checkpoint stays in the ledger, and the refusal is said.
func TestAWitnessThatIsAFIFOBlocksNoWriter(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	key, fifo := filepath.Join(dir, "signing.key"), filepath.Join(dir, "witness")
	clitest.Must(t, 0, root, "keygen", "--name", "ops", "-o", key)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	me, _ := sleeper(t)
	r := clitest.Must(t, 0, root, "acquire", "a", "--pid", strconv.Itoa(me), "--signing-key", key, "--witness", fifo, "--checkpoint-every", "1")
	if !strings.Contains(r.Stderr, "witness") {
		t.Fatalf("the refused witness is not said:\n%s", r.Stderr)
	}
	clitest.Must(t, 0, root, "acquire", "b", "--pid", strconv.Itoa(me))
	if n := clitest.Strings(t, root, `SELECT size FROM checkpoints`); len(n) == 0 {
		t.Fatal("the checkpoint was not stored in the ledger")
	}
}
