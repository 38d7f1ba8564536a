package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The rows of the "copies" group measure each speed-only duplicate in the
// product against the same commands without it, in the same run: a
// duplicate stays only while its row shows it at least 1.3x faster on what
// the user sees (BENCHMARKS.md, "Speed-only duplicates").

// benchDecoder: `replay --as-of T` and `verify` on the scale ledger with
// replay's own body decoder (the binary measured) against a build of the
// same source with the tag lockledger_nofastdecode, which decodes every
// body with encoding/json. Alternated, medians.
func benchDecoder(tmp, root string, day time.Time) {
	benchCopy(tmp, root, "lockledger_nofastdecode", "replay's own decoder vs encoding/json alone", []copyCmd{
		{"`replay --as-of T --json`", 5, []string{"replay", "--as-of", day.Format(time.RFC3339), "--json"}},
		{"`verify`", 3, []string{"verify"}},
	})
}

// benchReadAhead: `replay --as-of T` on the scale ledger with replay's
// read-ahead (rows read on a goroutine of their own while the fold runs)
// against a build with the tag lockledger_noreadahead, which reads and
// folds on one goroutine. Alternated, medians.
func benchReadAhead(tmp, root string, day time.Time) {
	benchCopy(tmp, root, "lockledger_noreadahead", "replay's read-ahead vs one goroutine", []copyCmd{
		{"`replay --as-of T --json`", 5, []string{"replay", "--as-of", day.Format(time.RFC3339), "--json"}},
	})
}

// copyCmd is a command a copies row times, and how many rounds.
type copyCmd struct {
	name   string
	rounds int
	args   []string
}

// benchCopy adds a row for each command: the binary measured against a
// build of the same source with tag, which leaves out the copy what names.
func benchCopy(tmp, root, tag, what string, cmds []copyCmd) {
	slow := filepath.Join(tmp, "build", "lockledger-"+tag)
	c := exec.Command("go", "build", "-tags", tag, "-o", slow, ".")
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	c.Stderr = os.Stderr
	if err := c.Run(); err != nil {
		die(fmt.Errorf("building lockledger -tags %s (run the bench from the repository's top directory): %w", tag, err))
	}
	slow = stage(slow, filepath.Join(tmp, "bin"), "lockledger-"+tag)
	for _, m := range cmds {
		var fast, plain []time.Duration
		var rssFast, rssPlain int64
		for i := 0; i < m.rounds; i++ {
			t, r := runBinCLI(*bin, root, m.args...)
			fast, rssFast = append(fast, t), max(rssFast, r)
			t, r = runBinCLI(slow, root, m.args...)
			plain, rssPlain = append(plain, t), max(rssPlain, r)
		}
		r := float64(median(plain)) / float64(median(fast))
		add(row{fmt.Sprintf("%s on %d events with %s (tag %s); peak RSS %.1f vs %.1f MiB (median of %d alternated)",
			m.name, *nEvents, what, tag, float64(rssFast)/1024, float64(rssPlain)/1024, m.rounds),
			ms(median(fast)), ms(median(plain)), fmt.Sprintf("%.2fx", r), ">= 1.3x to keep it", yes(r >= 1.3)})
	}
}
