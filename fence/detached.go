package fence

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/ledger"
)

// RecorderCommand is the lockledger CLI's hidden command that records one
// refusal as fence_rejected, retrying while the ledger is busy until its
// --until: the detached recorder that RecorderCmd and RecordDetached start.
const RecorderCommand = "__record-fence-rejection"

// RecordFor bounds how long a refusal's recorder retries while the ledger
// cannot take the event: fence write's, and RecordDetached's when its
// context has no deadline. Past it the write is still refused, with a
// warning.
const RecordFor = time.Minute

// RecorderCmd is the recorder of stale's refusal on lock, as a process of
// exe (the lockledger CLI) in a session of its own: a signal to its
// starter's process group (run stopping the refused job and KILLing it
// after --kill-grace) or its starter's death does not reach it, so the
// refusal is recorded even when the refused writer is killed right after
// it. global are the CLI's global flags that find the ledger (--root,
// --database, ...); the recorder also reads the LOCKLEDGER_* variables of
// its environment, as any lockledger command. It tries until until. id is
// the refused writer (PID 0: this process). Not started.
func RecorderCmd(exe string, global []string, lock string, id ledger.Identity, stale *StaleError, until time.Time) *exec.Cmd {
	if id.PID == 0 {
		id.PID = os.Getpid()
	}
	args := append(append([]string(nil), global...), RecorderCommand,
		"--lock="+lock, "--pid="+strconv.Itoa(id.PID), "--request-id="+id.RequestID, "--actor="+id.Actor,
		"--fence="+stale.Fence, "--resource="+stale.Resource,
		"--stale-token="+strconv.FormatInt(stale.Token, 10), "--current-token="+strconv.FormatInt(stale.Current, 10),
		"--until="+until.UTC().Format(time.RFC3339Nano))
	return proc.Detached(exe, args...)
}

// RecordDetached is Record done by a detached recorder (RecorderCmd) of
// exe, the lockledger CLI, with global flags that find the ledger: for a
// writer that may be killed right after a refusal (a job whose run found
// its lock lost), whose own Record would die with it. It waits for the
// recorder, which tries until ctx's deadline (RecordFor without one) and
// goes on if this process is killed meanwhile. An err that holds no
// refusal records nothing.
func RecordDetached(ctx context.Context, exe string, global []string, lock string, id ledger.Identity, err error) error {
	stale, ok := AsStale(err)
	if !ok {
		return nil
	}
	until, ok := ctx.Deadline()
	if !ok {
		until = time.Now().Add(RecordFor)
	}
	cmd := RecorderCmd(exe, global, lock, id, stale, until)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if rerr := cmd.Run(); rerr != nil {
		return fmt.Errorf("recording the refusal on %s: %w: %s", lock, rerr, strings.TrimSpace(stderr.String()))
	}
	return nil
}
