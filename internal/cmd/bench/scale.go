package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
)

// runCLI runs lockledger and returns its wall time and peak RSS (see
// runMeasured).
func runCLI(root string, args ...string) (time.Duration, int64) {
	return runBinCLI(*bin, root, args...)
}

// runBinCLI is runCLI with another lockledger binary.
func runBinCLI(bin, root string, args ...string) (time.Duration, int64) {
	return runBinCLIIn(bin, root, root+"-trust", args...)
}

// runBinCLIIn is runBinCLI with the trust store trust.
func runBinCLIIn(bin, root, trust string, args ...string) (time.Duration, int64) {
	c := exec.Command(bin, append([]string{"--log-level", "error"}, args...)...)
	c.Env = append(cliEnv(trust), "LOCKLEDGER_ROOT="+root)
	took, rss, out, err := measure(c)
	if err != nil {
		die(fmt.Errorf("lockledger %v: %v\n%s", args, err, out))
	}
	return took, rss
}

// rawScan is the physical reference for verify: read every row in seq
// order and recompute its sha256 link.
func rawScan(root string) time.Duration {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile)+"?mode=ro")
	if err != nil {
		die(err)
	}
	defer db.Close()
	s := time.Now()
	rows, err := db.Query(`SELECT seq, prev_hash, body, hash FROM events ORDER BY seq`)
	if err != nil {
		die(err)
	}
	bad := 0
	for rows.Next() {
		var seq int64
		var prev, hash string
		var body []byte
		if err := rows.Scan(&seq, &prev, &body, &hash); err != nil {
			die(err)
		}
		if events.ChainHash(seq, prev, body) != hash {
			bad++
		}
	}
	if err := rows.Err(); err != nil {
		die(err)
	}
	rows.Close()
	if bad > 0 {
		die(fmt.Errorf("fixture has %d bad hashes", bad))
	}
	return time.Since(s)
}

func benchScale(tmp string) {
	// The rows below write to their ledger (a checkpoint, an archive and a
	// prune): they run on a copy of the kept one.
	kept, info := keptLedger(yearSpec(*nEvents))
	root := filepath.Join(tmp, "scale")
	s := time.Now()
	if out, err := exec.Command("cp", "-a", kept, root).CombinedOutput(); err != nil {
		die(fmt.Errorf("copying %s: %w\n%s", kept, err, out))
	}
	fmt.Fprintf(os.Stderr, "  copied it in %s\n", time.Since(s).Round(time.Millisecond))
	day, lock := info.Spec.Middle().Truncate(24*time.Hour), info.Busiest
	if day.Before(info.Spec.Start) { // a ledger shorter than two days
		day = info.Spec.Middle()
	}
	if want("copies") {
		benchDecoder(tmp, root, day)
		benchReadAhead(tmp, root, day)
	}
	if !want("scale") {
		return
	}
	// verify against the raw scan, alternated, best of 3 each.
	var v, r time.Duration
	for i := 0; i < 3; i++ {
		vt, _ := runCLI(root, "verify")
		rt := rawScan(root)
		if i == 0 || vt < v {
			v = vt
		}
		if i == 0 || rt < r {
			r = rt
		}
	}
	ratio := float64(v) / float64(r)
	add(row{fmt.Sprintf("`verify` of %d events vs raw scan + sha256 of the same rows (best of 3)", *nEvents),
		ms(v), ms(r), fmt.Sprintf("%.2fx", ratio), "<= 1.3x", yes(ratio <= 1.3)})

	// A checkpoint signed now, and verify against it (its signature, the
	// tree at its size, the ledger's own checkpoints) vs plain verify.
	key, vkey := filepath.Join(tmp, "signing.key"), ""
	skey, vk, err := checkpoint.GenerateKey("bench")
	if err != nil {
		die(err)
	}
	vkey = vk
	if err := os.WriteFile(key, []byte(skey+"\n"), 0o600); err != nil {
		die(err)
	}
	cpFile := filepath.Join(tmp, "scale.checkpoint")
	ct, _ := runCLI(root, "checkpoint", "--signing-key", key, "--witness", cpFile)
	add(row{fmt.Sprintf("`checkpoint` (sign the tree of %d events, store, one witness file), whole command", *nEvents),
		ms(ct), "-", "-", "report", "-"})
	var vc, vp time.Duration
	for i := 0; i < 3; i++ {
		ct, _ := runCLI(root, "verify", "--checkpoint", cpFile, "--verifier-key", vkey)
		pt, _ := runCLI(root, "verify")
		if i == 0 || ct < vc {
			vc = ct
		}
		if i == 0 || pt < vp {
			vp = pt
		}
	}
	add(row{fmt.Sprintf("`verify --checkpoint FILE --verifier-key K` of %d events vs plain `verify` (best of 3)", *nEvents),
		ms(vc), ms(vp), fmt.Sprintf("%.2fx", float64(vc)/float64(vp)), "report", "-"})

	var tl []time.Duration
	for i := 0; i < 9; i++ {
		t, _ := runCLI(root, "timeline", "--lock", lock, "--since", day.Format(time.RFC3339),
			"--until", day.Add(24*time.Hour).Format(time.RFC3339), "--format", "jsonl")
		tl = append(tl, t)
	}
	add(row{"`timeline --lock L --since/--until` one day, whole command (median of 9)", ms(median(tl)), "-", "-", "< 20 ms", yes(median(tl) < 20*time.Millisecond)})

	benchWho(root, lock, day.Add(12*time.Hour))
	rss := benchReplay(root, day)
	add(row{"`replay --as-of` peak RSS", fmt.Sprintf("%.1f MiB", float64(rss)/1024), "-", "-", "< 64 MiB", yes(rss < 64*1024)})

	out := filepath.Join(tmp, "export.jsonl")
	et, _ := runCLI(root, "export", "--format", "jsonl", "-o", out)
	fi, _ := os.Stat(out)
	size := int64(0)
	if fi != nil {
		size = fi.Size()
	}
	add(row{"`export --format jsonl` of the whole ledger", fmt.Sprintf("%s (%.0f MiB)", ms(et), float64(size)/(1<<20)), "-", "-", "report", "-"})

	// Keeping a year: every event up to the checkpoint signed above goes
	// to one archive file, then out of the live store.
	arch, db := filepath.Join(tmp, "archive.jsonl"), filepath.Join(root, "ledger.db")
	before := fileMiB(db)
	at, _ := runCLI(root, "archive", "--before", "0s", "-o", arch)
	add(row{fmt.Sprintf("`archive` of the %d events up to the signed checkpoint, to one file", *nEvents),
		fmt.Sprintf("%s (%.0f MiB)", ms(at), fileMiB(arch)), "-", "-", "report", "-"})
	pt, _ := runCLI(root, "prune", "--archive", arch)
	add(row{"`prune --archive` of them (the archive checked against the live tree, the events deleted, VACUUM)",
		ms(pt), "-", "-", "report", "-"})
	vt, _ := runCLI(root, "verify")
	add(row{"ledger.db before and after the prune; plain `verify` of the pruned ledger",
		fmt.Sprintf("%.0f MiB -> %.1f MiB; verify %s", before, fileMiB(db), ms(vt)), "-", "-", "report", "-"})
}

// fileMiB is the size of path in MiB, 0 when it cannot be read.
func fileMiB(path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(fi.Size()) / (1 << 20)
}

// sqlite3 runs the sqlite3 shell on the ledger read-only, its output
// discarded, and returns its wall time.
func sqlite3(root, query string) time.Duration {
	c := exec.Command("sqlite3", "-readonly", filepath.Join(root, ledger.DBFile), query)
	c.Stdout, c.Stderr = nil, os.Stderr
	s := time.Now()
	if err := c.Run(); err != nil {
		die(fmt.Errorf("sqlite3 %q: %w", query, err))
	}
	return time.Since(s)
}

func haveSQLite3() bool {
	_, err := exec.LookPath("sqlite3")
	if err != nil {
		add(row{"sqlite3 references", "skipped: sqlite3 not found", "-", "-", "-", "-"})
	}
	return err == nil
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// benchWho: `who L --at T` against the sqlite3 shell running the query who
// runs (the lock's events up to T, in seq order, through the same index),
// whole processes, alternated, median of 9.
func benchWho(root, lock string, at time.Time) {
	if !haveSQLite3() {
		return
	}
	q := "SELECT seq, body, prev_hash, hash FROM events INDEXED BY events_lock_at WHERE lock_name = " + sqlQuote(lock) +
		" AND at <= " + sqlQuote(events.FormatTime(at)) + " ORDER BY seq"
	var w, r []time.Duration
	for i := 0; i < 9; i++ {
		t, _ := runCLI(root, "who", lock, "--at", at.Format(time.RFC3339), "--json")
		w = append(w, t)
		r = append(r, sqlite3(root, q))
	}
	ratio := float64(median(w)) / float64(median(r))
	add(row{fmt.Sprintf("`who L --at T` on %d events vs `sqlite3` running the same query (busiest lock, median of 9 alternated)", *nEvents),
		ms(median(w)), ms(median(r)), fmt.Sprintf("%.2fx", ratio), "<= 1.5x", yes(ratio <= 1.5)})
}

// benchReplay: `replay --as-of T` (every lock) against the sqlite3 shell
// dumping the rows it folds, alternated, best of 3; returns replay's peak
// RSS in KiB.
func benchReplay(root string, day time.Time) int64 {
	var last int64
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, ledger.DBFile)+"?mode=ro")
	if err != nil {
		die(err)
	}
	err = db.QueryRow(`SELECT coalesce(max(seq), 0) FROM events WHERE at <= ?`, events.FormatTime(day)).Scan(&last)
	db.Close()
	if err != nil {
		die(err)
	}
	var rp, dump time.Duration
	var rss int64
	have := haveSQLite3()
	for i := 0; i < 3; i++ {
		t, m := runCLI(root, "replay", "--as-of", day.Format(time.RFC3339), "--json")
		if i == 0 || t < rp {
			rp = t
		}
		rss = max(rss, m)
		if !have {
			continue
		}
		d := sqlite3(root, "SELECT seq, body, prev_hash, hash FROM events WHERE seq <= "+strconv.FormatInt(last, 10)+" ORDER BY seq")
		if i == 0 || d < dump {
			dump = d
		}
	}
	if dump > 0 {
		ratio := float64(rp) / float64(dump)
		add(row{fmt.Sprintf("`replay --as-of T` (%d events up to T) vs `sqlite3` dumping the same rows (best of 3, alternated)", last),
			ms(rp), ms(dump), fmt.Sprintf("%.2fx", ratio), "<= 2.0x", yes(ratio <= 2.0)})
	}
	return rss
}
