package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The rows of the "copies" group measure each speed-only duplicate in the
// product against the same commands without it, in the same run: a
// duplicate stays only while its row shows it at least 1.3x faster on what
// the user sees.

// benchHold: `run NAME -- true` and `status NAME` with GOMAXPROCS unset
// (a lock command is held on one processor, internal/oneproc) against the
// same binary with GOMAXPROCS set to the machine's processors, which
// oneproc obeys and so does not hold: the runtime's own choice. Alternated,
// medians.
func benchHold(tmp string) {
	var base []string
	for _, kv := range cliEnv(filepath.Join(tmp, "hold-trust")) {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") {
			base = append(base, kv)
		}
	}
	held := append(slices.Clip(base), "LOCKLEDGER_ROOT="+filepath.Join(tmp, "hold"))
	free := append(slices.Clip(held), "GOMAXPROCS="+strconv.Itoa(runtime.NumCPU()))
	timeCmd(held, *bin, "--log-level", "error", "run", "warm", "--", "true")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"`run NAME -- true`", []string{"--log-level", "error", "run", "bench", "--", "true"}},
		{"`status NAME`", []string{"--log-level", "error", "status", "bench"}},
	} {
		var h, f []sample
		for i := 0; i < *pairs; i++ {
			if i%2 == 0 {
				h = append(h, runCmd(held, *bin, c.args...))
				f = append(f, runCmd(free, *bin, c.args...))
			} else {
				f = append(f, runCmd(free, *bin, c.args...))
				h = append(h, runCmd(held, *bin, c.args...))
			}
		}
		mh, mf := medianSample(h), medianSample(f)
		r := float64(mf.wall) / float64(mh.wall)
		add(row{fmt.Sprintf("%s held on one processor (GOMAXPROCS unset) vs not held (GOMAXPROCS=%d), wall; CPU %s vs %s (median of %d alternated pairs)",
			c.name, runtime.NumCPU(), ms(mh.cpu), ms(mf.cpu), *pairs),
			ms(mh.wall), ms(mf.wall), fmt.Sprintf("%.2fx", r), ">= 1.3x to keep it", yes(r >= 1.3)})
	}
}

// benchDecoder: `replay --as-of T` and `verify` on the scale ledger with
// replay's own body decoder (the binary measured) against a build of the
// same source with the tag lockledger_nofastdecode, which decodes every
// body with encoding/json. Alternated, medians.
func benchDecoder(tmp, root string, day time.Time) {
	slow := filepath.Join(tmp, "build", "lockledger-nofastdecode")
	c := exec.Command("go", "build", "-tags", "lockledger_nofastdecode", "-o", slow, ".")
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	c.Stderr = os.Stderr
	if err := c.Run(); err != nil {
		die(fmt.Errorf("building lockledger -tags lockledger_nofastdecode (run the bench from the repository's top directory): %w", err))
	}
	slow = stage(slow, filepath.Join(tmp, "bin"), "lockledger-nofastdecode")
	for _, m := range []struct {
		name   string
		rounds int
		args   []string
	}{
		{"`replay --as-of T --json`", 5, []string{"replay", "--as-of", day.Format(time.RFC3339), "--json"}},
		{"`verify`", 3, []string{"verify"}},
	} {
		var fast, plain []time.Duration
		var rssFast, rssPlain int64
		for i := 0; i < m.rounds; i++ {
			t, r := runBinCLI(*bin, root, m.args...)
			fast, rssFast = append(fast, t), max(rssFast, r)
			t, r = runBinCLI(slow, root, m.args...)
			plain, rssPlain = append(plain, t), max(rssPlain, r)
		}
		r := float64(median(plain)) / float64(median(fast))
		add(row{fmt.Sprintf("%s on %d events with replay's own decoder vs encoding/json alone (tag lockledger_nofastdecode); peak RSS %.1f vs %.1f MiB (median of %d alternated)",
			m.name, *nEvents, float64(rssFast)/1024, float64(rssPlain)/1024, m.rounds),
			ms(median(fast)), ms(median(plain)), fmt.Sprintf("%.2fx", r), ">= 1.3x to keep it", yes(r >= 1.3)})
	}
}
