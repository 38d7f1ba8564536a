package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	ckpt "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/trust"
)

// tinyDisk mounts a tmpfs of size bytes for the test, so that a disk can
// fill up under a real command. It needs root (CI runs as root); elsewhere
// the test is skipped, loudly.
func tinyDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("LOCKLEDGER_CI") == "1" {
			t.Fatal("a full disk needs a tmpfs mount, which needs root")
		}
		t.Skip("SKIP: mounting a tiny tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		if os.Getenv("LOCKLEDGER_CI") == "1" {
			t.Fatalf("mount tmpfs: %v", err)
		}
		t.Skipf("SKIP: mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes path until the disk is full and returns a function that
// frees the space again.
func fillDisk(t *testing.T, path string) (free func()) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", path, err)
			}
			break
		}
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// A release that cannot commit leaves the lock held in both worlds: the
// ledger's row and the lock files (its own and another tool's), so that no
// other tool takes a lock whose holder is alive.
func TestReleaseOnAFullDiskLeavesTheLockHeld(t *testing.T) {
	t.Parallel()
	disk := tinyDisk(t, "2m")
	root := filepath.Join(disk, "root")
	tf := filepath.Join(disk, "tower-fleet.lock")
	holder := exec.Command("sleep", "300")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	pid := holder.Process.Pid
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "prod", "--pid", strconv.Itoa(pid), "--file", "tower-fleet:"+tf).Stdout)
	lockFile := filepath.Join(root, "locks", "prod.lock")

	free := fillDisk(t, filepath.Join(disk, "filler"))
	r := clitest.Run(t, root, "release", "prod", "--request-id", rid)
	if r.Code == 0 {
		t.Fatalf("release on a full disk exited 0; stderr: %s", r.Stderr)
	}
	for _, p := range []string{lockFile, tf} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("after a release that did not commit, %s: %v (the ledger still records the holder)", p, err)
		}
	}
	free()

	st := clitest.Run(t, root, "status", "prod")
	if !strings.Contains(st.Stdout, "prod: held") {
		t.Errorf("status after the failed release:\n%s%s", st.Stdout, st.Stderr)
	}
	clitest.Must(t, 0, root, "release", "prod", "--request-id", rid)
	for _, p := range []string{lockFile, tf} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after the release, %s: %v, want it removed", p, err)
		}
	}
	clitest.Must(t, 0, root, "verify")
}

// A pin that a full disk cut short leaves no torn line behind for the next
// pin to run on from: the next root trusted on first use is pinned, and
// told so once.
func TestAPinCutShortByAFullDiskLosesNoLaterPin(t *testing.T) {
	t.Parallel()
	disk := tinyDisk(t, "2m")
	env := []string{trust.EnvDir + "=" + filepath.Join(disk, "trust")}
	dir := t.TempDir()
	first, cut, next := filepath.Join(dir, "first"), filepath.Join(dir, "cut"), filepath.Join(dir, "next")
	if r := clitest.RunWith(t, first, env, "", "acquire", "a"); r.Code != 0 {
		t.Fatalf("acquire at %s: exit %d\n%s", first, r.Code, r.Stderr)
	}
	// A comment line that ends a few bytes short of the file's first page,
	// so that the next pin's line needs a page the full disk does not have.
	pins := filepath.Join(disk, "trust", trust.PinsFile)
	fi, err := os.Stat(pins)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(pins, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("#" + strings.Repeat("x", 4096-40-int(fi.Size())-2) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	free := fillDisk(t, filepath.Join(disk, "filler"))
	if r := clitest.RunWith(t, cut, env, "", "acquire", "a"); r.Code == 0 || !strings.Contains(r.Stderr, "no space left") {
		t.Fatalf("acquire at %s on a full disk: exit %d, want a failure to pin naming the full disk\n%s", cut, r.Code, r.Stderr)
	}
	free()

	for i, want := range []bool{true, false} {
		r := clitest.RunWith(t, next, env, "", "acquire", "a"+strconv.Itoa(i))
		if r.Code != 0 {
			t.Fatalf("acquire at %s: exit %d\n%s", next, r.Code, r.Stderr)
		}
		if got := strings.Contains(r.Stderr, "on first use"); got != want {
			t.Errorf("acquire %d at %s says it trusts the ledger on first use: %v, want %v\n%s", i+1, next, got, want, r.Stderr)
		}
	}
	st, err := trust.Open(filepath.Join(disk, "trust"), next)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.PinsOf(next); err != nil || len(got) != 1 {
		b, _ := os.ReadFile(pins)
		t.Errorf("pins of %s: %v, %v; want one\n%s", next, got, err, b)
	}
}

// A witness's note that a full disk cut short leaves nothing torn behind
// for the next note to run on from: every note in the witness file opens,
// and the one after the full disk is there.
func TestAWitnessNoteCutShortByAFullDiskLosesNoLaterNote(t *testing.T) {
	t.Parallel()
	disk := tinyDisk(t, "2m")
	witness := filepath.Join(disk, "witness.notes")
	env := []string{"LOCKLEDGER_WITNESS=" + witness, "LOCKLEDGER_CHECKPOINT_EVERY=1"}
	root := filepath.Join(t.TempDir(), "root")
	run := func(args ...string) clitest.Result {
		t.Helper()
		r := clitest.RunWith(t, root, env, "", args...)
		if r.Code != 0 {
			t.Fatalf("lockledger %s: exit %d\n%s", strings.Join(args, " "), r.Code, r.Stderr)
		}
		return r
	}
	run("acquire", "a")
	// Blank lines (skipped between notes) up to a few bytes short of the
	// file's first page, so that the next note needs a page the full disk
	// does not have.
	fi, err := os.Stat(witness)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(witness, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(strings.Repeat("\n", 4096-40-int(fi.Size())))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	free := fillDisk(t, filepath.Join(disk, "filler"))
	if r := run("acquire", "b"); !strings.Contains(r.Stderr, "no space left") {
		t.Fatalf("acquire with the witness's disk full does not say its copy failed:\n%s", r.Stderr)
	}
	free()
	run("acquire", "c")
	b, err := os.ReadFile(witness)
	if err != nil {
		t.Fatal(err)
	}
	id := ledgerID(t, root)
	var sizes []int64
	for _, e := range ckpt.SplitNotes(b) {
		c, err := ckpt.Open(e.Note)
		if err != nil || c.LedgerID() != id {
			t.Fatalf("the witness's note at line %d is not one of ledger %s's (%v): %q", e.Line, id, err, e.Note)
		}
		sizes = append(sizes, c.Size)
	}
	if len(sizes) != 2 || sizes[1] <= sizes[0] {
		t.Errorf("the witness holds checkpoints of sizes %v, want the first and the one after the full disk", sizes)
	}
}
