package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/migrations"
)

// The scale ledgers are generated once and kept between runs, one
// directory per description (its size, its mix, the generator's version
// and the schema its rows are loaded into), so that a run reuses what an
// earlier one made and a change to any of them makes a new one.

var cacheFlag = flag.String("cache", "", "where generated ledgers are kept between runs, one directory each (default $LOCKLEDGER_BENCH_CACHE, else lockledger-bench in the user's cache directory)")

// cacheDir is where kept ledgers live.
func cacheDir() string {
	if *cacheFlag != "" {
		return *cacheFlag
	}
	if d := os.Getenv("LOCKLEDGER_BENCH_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		die(fmt.Errorf("no directory to keep the generated ledgers in (-cache or LOCKLEDGER_BENCH_CACHE): %w", err))
	}
	return filepath.Join(d, "lockledger-bench")
}

// ledgerSpec describes a generated ledger: fixture.Ledger's description,
// the version of its generator and the schema its rows are loaded into.
type ledgerSpec struct {
	Events, Locks  int
	Start          time.Time
	Span, HeldBeat time.Duration
	Generator      int // fixture.LedgerVersion
	Schema         int // migrations.Latest()
}

// yearEvents is the size of a year's ledger: 200 locks, one of them held
// all year with a heartbeat every 10 s, the rest in the fixture's mix.
const yearEvents = 10_000_000

const year = 365 * 24 * time.Hour

// yearSpec is n events at the rate of the year's ledger (so over a tenth
// of the year for a tenth of its events): two sizes differ in the length
// of their history alone.
func yearSpec(n int) ledgerSpec {
	return ledgerSpec{Events: n, Locks: 200, Start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		Span: time.Duration(float64(year) * float64(n) / yearEvents), HeldBeat: 10 * time.Second,
		Generator: fixture.LedgerVersion, Schema: migrations.Latest()}
}

// key names the spec's directory: every field, readable.
func (s ledgerSpec) key() string {
	return fmt.Sprintf("e%d-l%d-from%s-span%ds-beat%ds-gen%d-schema%d", s.Events, s.Locks, s.Start.UTC().Format("20060102T150405Z"),
		int64(s.Span/time.Second), int64(s.HeldBeat/time.Second), s.Generator, s.Schema)
}

// Middle is the instant the audit reads look at: the middle of the span.
func (s ledgerSpec) Middle() time.Time { return s.Start.Add(s.Span / 2) }

// keptInfo is a kept ledger's description and what making it cost,
// stored beside it as info.json.
type keptInfo struct {
	Spec      ledgerSpec
	Busiest   string // the regular lock with the most events
	Generated time.Time
	Took, CPU time.Duration // generation: wall time and this process's CPU time
	Bytes     int64         // the root's files
}

const keptInfoFile = "info.json"

// keptRoot is the ledger's root in a kept directory.
func keptRoot(dir string) string { return filepath.Join(dir, "root") }

// keepLedger returns the root of the ledger spec describes, kept in cache,
// generating it first when no earlier run has (generated true). The
// directory appears whole or not at all: it is made under another name
// and renamed when done, under a lock file so that concurrent runs
// generate it once.
func keepLedger(cache string, spec ledgerSpec) (root string, info keptInfo, generated bool, err error) {
	dir := filepath.Join(cache, spec.key())
	if info, err := readKept(dir); err == nil {
		return keptRoot(dir), info, false, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", keptInfo{}, false, err
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", keptInfo{}, false, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		fmt.Fprintf(os.Stderr, "  waiting for another run to finish generating %s (see %s.partial)\n", dir, dir)
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		if err != nil {
			return "", keptInfo{}, false, err
		}
	} else if err != nil {
		return "", keptInfo{}, false, err
	}
	if info, err := readKept(dir); err == nil {
		return keptRoot(dir), info, false, nil
	}
	if err := roomFor(cache, spec.Events); err != nil {
		return "", keptInfo{}, false, err
	}
	partial := dir + ".partial"
	if err := os.RemoveAll(partial); err != nil {
		return "", keptInfo{}, false, err
	}
	info, err = generateKept(keptRoot(partial), spec)
	if err != nil {
		return "", keptInfo{}, false, fmt.Errorf("generating %s: %w", partial, err)
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(partial, keptInfoFile), append(b, '\n'), 0o644)
	}
	if err == nil {
		err = os.Rename(partial, dir)
	}
	if err != nil {
		return "", keptInfo{}, false, err
	}
	return keptRoot(dir), info, true, nil
}

func readKept(dir string) (keptInfo, error) {
	var info keptInfo
	b, err := os.ReadFile(filepath.Join(dir, keptInfoFile))
	if err == nil {
		err = json.Unmarshal(b, &info)
	}
	return info, err
}

// bytesPerEvent bounds what a generated event takes on disk, its indexes,
// Merkle row and the sort that remakes the indexes included.
const bytesPerEvent = 1600

// roomFor refuses to start a generation the file system has no room for.
func roomFor(dir string, events int) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return err
	}
	free, need := int64(st.Bavail)*int64(st.Bsize), int64(events)*bytesPerEvent
	if free < need {
		return fmt.Errorf("%s has %.1f GB free; a ledger of %d events needs about %.1f GB", dir, float64(free)/1e9, events, float64(need)/1e9)
	}
	return nil
}

// generateKept writes spec's ledger at root, projects it (the locks
// table and files a reader of the ledger expects) and stores its
// snapshots.
func generateKept(root string, spec ledgerSpec) (keptInfo, error) {
	start, cpu := time.Now(), selfCPU()
	_, perLock, err := fixture.Ledger{Events: spec.Events, Locks: spec.Locks, Start: spec.Start, Span: spec.Span,
		HeldBeat: spec.HeldBeat}.Write(root)
	if err != nil {
		return keptInfo{}, err
	}
	ctx := context.Background()
	l, err := ledger.Open(ctx, root, ledger.MustExist(), ledger.Unsigned())
	if err != nil {
		return keptInfo{}, err
	}
	_, err = l.Project(ctx)
	if err == nil {
		// The snapshots the writes that made a real ledger this long
		// would have stored as it grew.
		err = l.WriteSnapshots(ctx)
	}
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return keptInfo{}, err
	}
	best := 0
	for i, c := range perLock {
		if c > perLock[best] {
			best = i
		}
	}
	info := keptInfo{Spec: spec, Busiest: fixture.LockName(best), Generated: time.Now().UTC(), Took: time.Since(start), CPU: selfCPU() - cpu}
	info.Bytes, err = treeBytes(root)
	return info, err
}

// treeBytes is the size of the regular files under dir.
func treeBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// keptLedger is keepLedger for the bench: it dies on failure and says on
// stderr what it generated or reused, and which other kept ledgers take
// room in the cache.
func keptLedger(spec ledgerSpec) (string, keptInfo) {
	cache := cacheDir()
	root, info, generated, err := keepLedger(cache, spec)
	if err != nil {
		die(err)
	}
	how := "reusing"
	if generated {
		how = "generated"
	}
	fmt.Fprintf(os.Stderr, "  %s %s (%d events, %.2f GB; generated %s in %s, %s CPU)\n", how, filepath.Dir(root), spec.Events,
		float64(info.Bytes)/1e9, info.Generated.Format(time.RFC3339), info.Took.Round(time.Second), info.CPU.Round(time.Second))
	if generated {
		entries, _ := os.ReadDir(cache)
		for _, e := range entries {
			if !e.IsDir() || e.Name() == spec.key() {
				continue
			}
			if other, err := readKept(filepath.Join(cache, e.Name())); err == nil && other.Spec.Events == spec.Events {
				fmt.Fprintf(os.Stderr, "  also kept, of the same size and another description (delete it if no run needs it): %s\n", filepath.Join(cache, e.Name()))
			}
		}
	}
	return root, info
}
