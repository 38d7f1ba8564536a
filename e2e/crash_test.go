package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// crashSeed is LOCKLEDGER_CRASH_SEED, or a fresh one; it is logged so that
// a failing schedule of kills can be replayed.
func crashSeed(t *testing.T) uint64 {
	if s := os.Getenv("LOCKLEDGER_CRASH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LOCKLEDGER_CRASH_SEED=%q: %v", s, err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// crashLoop is a shell that takes, renews and frees locks for as long as it
// lives, and says on stdout what each step did once the step has exited 0:
// "acquired LOCK RID", "heartbeat LOCK RID", "released LOCK RID". It is
// the recorded holder (--pid $$), so killing it leaves a dead holder.
const crashLoop = `i=$START
while :; do
	lock=crash-$((i % CRASH_LOCKS)); i=$((i + 1))
	if [ "$MODE" = steal ] && [ $((i % 2)) = 0 ]; then
		rid=$("$LL" steal "$lock" --active --yes --reason chaos --ttl 60 --pid $$ 2>/dev/null) || continue
	else
		rid=$("$LL" acquire "$lock" --ttl 60 --wait 3s --pid $$ 2>/dev/null) || continue
	fi
	echo "acquired $lock $rid"
	"$LL" heartbeat "$lock" --request-id "$rid" 2>/dev/null && echo "heartbeat $lock $rid"
	"$LL" release "$lock" --request-id "$rid" 2>/dev/null && echo "released $lock $rid"
done`

// crashLocks is how many locks the victims share: enough that they seldom
// queue behind each other, few enough that dead holders get taken over.
const crashLocks = 5

// victim is one process group that will be killed with SIGKILL. Its
// stdout is read line by line, so that a kill can be aimed after the
// victim has finished some steps (and so is somewhere inside a later one).
type victim struct {
	kind  string
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   bytes.Buffer
	lines chan struct{} // one token per line printed
	done  chan struct{} // stdout closed
}

func startVictim(t *testing.T, root string, rng *rand.Rand, n int) *victim {
	t.Helper()
	v := &victim{lines: make(chan struct{}, 1024), done: make(chan struct{})}
	switch r := rng.IntN(10); {
	case r < 5:
		v.kind = "acquire/heartbeat/release loop"
		mode := "acquire"
		if r == 0 {
			mode, v.kind = "steal", "steal/heartbeat/release loop"
		}
		v.cmd = exec.Command("sh", "-c", crashLoop)
		v.cmd.Env = append(clitest.Env(root), "LL="+clitest.Bin(), "MODE="+mode, "START="+strconv.Itoa(n),
			"CRASH_LOCKS="+strconv.Itoa(crashLocks))
	case r < 9:
		v.kind = "run"
		lock := "crash-" + strconv.Itoa(rng.IntN(crashLocks))
		v.cmd = clitest.Command(context.Background(), root, "run", lock, "--ttl", "60", "--wait", "3s", "--",
			"sh", "-c", `echo "acquired $LOCKLEDGER_LOCK $LOCKLEDGER_REQUEST_ID"; exec sleep 0.2`)
	default:
		v.kind = "project"
		v.cmd = clitest.Command(context.Background(), root, "project")
	}
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	v.cmd.WaitDelay = 10 * time.Second
	out, err := v.cmd.StdoutPipe()
	if err != nil {
		t.Error(err)
		return nil
	}
	if err := v.cmd.Start(); err != nil {
		t.Error(err) // called from a worker goroutine: no Fatal
		return nil
	}
	go func() {
		defer close(v.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			v.mu.Lock()
			v.out.WriteString(sc.Text() + "\n")
			v.mu.Unlock()
			select {
			case v.lines <- struct{}{}:
			default:
			}
		}
	}()
	return v
}

// awaitLines waits until the victim has printed n lines, for at most max
// or until it has exited by itself.
func (v *victim) awaitLines(n int, max time.Duration) {
	timeout := time.After(max)
	for i := 0; i < n; i++ {
		select {
		case <-v.lines:
		case <-v.done:
			return
		case <-timeout:
			return
		}
	}
}

// journalSet names the lock-file journals on disk with their inode.
func journalSet(root string) map[string]bool {
	m, _ := filepath.Glob(filepath.Join(root, "locks", ".*.pending"))
	out := map[string]bool{}
	for _, p := range m {
		if fi, err := os.Stat(p); err == nil {
			out[fmt.Sprintf("%s@%v", p, fi.Sys().(*syscall.Stat_t).Ino)] = true
		}
	}
	return out
}

// kill sends SIGKILL to the victim's whole process group, reaps it and
// returns what it printed.
func (v *victim) kill() string {
	_ = syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL)
	<-v.done
	_ = v.cmd.Wait()
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.out.String()
}

// killPlan is when one victim dies: after it has printed lines lines (a
// finished step each), plus a random delay that lands inside whatever it
// does next.
type killPlan struct {
	lines int
	delay time.Duration
}

// TestCrashKillNineAtRandomMoments runs acquire/heartbeat/release loops,
// steal loops, `run` and `project` as real processes on one ledger and
// kills each with SIGKILL at a random moment (at least 50 kills; 1000
// under LOCKLEDGER_STRESS=1), several at a time. A kill waits for 0-2
// finished steps of its victim, then a random 0-300 ms, so that kills fall
// inside every phase of an operation whatever the machine's speed.
// Afterwards:
//   - PRAGMA integrity_check is ok and the hash chain verifies from genesis
//     with contiguous seqs and schema-valid bodies;
//   - every step a killed process reported as done (it printed it after the
//     command exited 0) has its committed event: nothing acknowledged is lost;
//   - replay shows no instant with two holders of a lock;
//   - `project` then `verify` exit 0 (projections rebuilt where a kill
//     interrupted them);
//   - no lock is wedged: a live process acquires every lock at once, the
//     dead holders being taken over as holder_dead.
func TestCrashKillNineAtRandomMoments(t *testing.T) {
	t.Parallel()
	seed := crashSeed(t)
	t.Logf("seed %d (LOCKLEDGER_CRASH_SEED=%d reproduces the schedule)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x10c4))
	kills, parallel := 50, 4
	if stressed() {
		kills, parallel = 1000, 6
	}
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "warmup", "--pid", self)
	clitest.Must(t, 0, root, "release", "warmup", "--force", "--yes", "--reason", "cleanup")

	var mu sync.Mutex
	var outs []string
	byKind := map[string]int{}
	var journals atomic.Int64
	var wg sync.WaitGroup
	plans := make(chan killPlan)
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for p := range plans {
				mu.Lock()
				v := startVictim(t, root, rng, n*parallel+w)
				mu.Unlock()
				n++
				if v == nil {
					continue
				}
				before := journalSet(root)
				v.awaitLines(p.lines, 20*time.Second)
				time.Sleep(p.delay)
				out := v.kill()
				for j := range journalSet(root) {
					if !before[j] {
						journals.Add(1) // a file change this kill (or a neighbour's) left half done
						break
					}
				}
				mu.Lock()
				outs = append(outs, out)
				byKind[v.kind]++
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	for i := 0; i < kills; i++ {
		mu.Lock()
		p := killPlan{lines: []int{0, 0, 1, 1, 2}[rng.IntN(5)], delay: time.Duration(rng.Int64N(int64(300 * time.Millisecond)))}
		mu.Unlock()
		plans <- p
	}
	close(plans)
	wg.Wait()
	t.Logf("%d SIGKILLs in %s: %v; %d kills left a new lock-file journal behind (a file change cut between link and commit)",
		kills, time.Since(start).Round(time.Millisecond), byKind, journals.Load())

	checkAfterCrashes(t, root, outs, kills/10)
}

// checkAfterCrashes runs the post-mortem checks on a ledger whose writers
// were killed; outs are the killed processes' stdout.
func checkAfterCrashes(t *testing.T, root string, outs []string, minAcked int) {
	t.Helper()
	assertIntegrity(t, root)
	assertChain(t, root)

	// Nothing acknowledged is lost.
	want := map[string]string{"acquired": "lock_acquired lock_stolen", "heartbeat": "lock_heartbeat", "released": "lock_released"}
	db := clitest.DB(t, root)
	acked := 0
	for _, out := range outs {
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || want[f[0]] == "" {
				if len(f) > 0 && want[f[0]] != "" {
					t.Errorf("torn line on a killed process's stdout: %q", sc.Text())
				}
				continue
			}
			acked++
			var n int
			types := strings.Fields(want[f[0]])
			q := `SELECT count(*) FROM events WHERE lock_name = ? AND request_id = ? AND type IN (?, ?)`
			if err := db.QueryRow(q, f[1], f[2], types[0], types[len(types)-1]).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Errorf("%q was reported done but no %s event has request id %s", sc.Text(), want[f[0]], f[2])
			}
		}
	}
	if acked < minAcked {
		t.Fatalf("only %d finished steps were reported by the killed processes, want at least %d: the kills came too early to test anything", acked, minAcked)
	}
	assertNoOverlaps(t, db)

	if r := clitest.Run(t, root, "project"); r.Code != 0 {
		t.Fatalf("project after the crashes: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := clitest.Run(t, root, "verify"); r.Code != 0 {
		t.Fatalf("verify after the crashes and project: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// No lock is wedged: a live process gets each one at once.
	self := strconv.Itoa(os.Getpid())
	reaped := 0
	for i := 0; i < crashLocks; i++ {
		lock := "crash-" + strconv.Itoa(i)
		r := clitest.Run(t, root, "acquire", lock, "--json", "--pid", self)
		if r.Code != 0 {
			t.Errorf("%s is wedged after the crashes: exit %d\n%s%s", lock, r.Code, r.Stdout, r.Stderr)
			continue
		}
		if strings.Contains(r.Stdout, `"reason":"holder_dead"`) {
			reaped++
		}
		clitest.Must(t, 0, root, "release", lock, "--force", "--yes", "--reason", "cleanup")
	}
	reasons := map[string]int{}
	rows, err := db.Query(`SELECT json_extract(body, '$.reason') FROM events WHERE type = 'lock_stolen'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		reasons[r]++
	}
	rows.Close()
	types := map[string]int{}
	for _, ty := range clitest.Types(t, root) {
		types[ty]++
	}
	t.Logf("%d acknowledged steps all found; events %v; steals by reason %v (%d dead holders reaped at the final check)",
		acked, types, reasons, reaped)
	assertChain(t, root)
	if r := clitest.Run(t, root, "verify"); r.Code != 0 {
		t.Fatalf("verify at the end: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestCrashDuringFirstOpen kills the very first acquire on a fresh root at
// a random moment (creating the root, the database, the migrations, the
// ledger id, the first event), then requires that the root works: another
// lock can be taken, the chain verifies and SQLite finds no damage.
func TestCrashDuringFirstOpen(t *testing.T) {
	t.Parallel()
	seed := crashSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0xf1257))
	n := 12
	if stressed() {
		n = 150
	}
	self := strconv.Itoa(os.Getpid())
	// Aim the kills over the whole first acquire as long as it takes on
	// this machine now: time one that is not killed.
	t0 := time.Now()
	clitest.Must(t, 0, filepath.Join(t.TempDir(), "calibration"), "acquire", "first", "--pid", self)
	span := time.Since(t0) * 4 // four at a time run slower than one alone
	outcomes := map[string]int{}
	var mu sync.Mutex
	sem := make(chan struct{}, 4)
	t.Run("kills", func(t *testing.T) {
		for i := 0; i < n; i++ {
			d := time.Duration(rng.Int64N(int64(span)))
			t.Run(fmt.Sprintf("%d-after-%s", i, d.Round(time.Microsecond)), func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				root := filepath.Join(t.TempDir(), "fresh")
				c := clitest.Command(context.Background(), root, "acquire", "first", "--pid", self)
				c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(d)
				_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
				err := c.Wait()
				outcome := "killed"
				if err == nil {
					outcome = "finished first"
				}
				r := clitest.Run(t, root, "acquire", "second", "--pid", self)
				if r.Code != 0 {
					t.Fatalf("after a kill %s into the first acquire: second acquire exit %d\n%s", d, r.Code, r.Stderr)
				}
				assertIntegrity(t, root)
				assertChain(t, root)
				if v := clitest.Run(t, root, "verify"); v.Code != 0 {
					t.Errorf("after a kill %s into the first acquire: verify exit %d\n%s%s", d, v.Code, v.Stdout, v.Stderr)
				}
				mu.Lock()
				outcomes[fmt.Sprintf("%s, first event %v", outcome, clitest.EventCount(t, root) == 2)]++
				mu.Unlock()
			})
		}
	})
	t.Logf("%d first opens killed within %s: %v", n, span.Round(time.Millisecond), outcomes)
}
