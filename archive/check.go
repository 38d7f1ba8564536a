package archive

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// Checked is an archive that verified on its own, with what a prune and
// verify --archive compare with the live log.
type Checked struct {
	Path     string
	SHA256   string
	LedgerID string // the one its checkpoint names
	FirstSeq int64
	LastSeq  int64
	// FirstPrevHash is what its first event chains from, HeadHash its last
	// event's hash, Root the tree's root at LastSeq (its checkpoint's).
	FirstPrevHash string
	HeadHash      string
	Root          tlog.Hash
	Report        *verify.Report // replay.VerifyFile's, finished
	leaves        []tlog.Hash
}

// Read checks the archive f (read from path) on its own, as verify
// --file does (opts: the verifier keys, the clock skew; prevHash, when not
// empty, is what its first event must chain from), and that it carries a
// checkpoint of exactly its events. It reads f twice, streaming, and
// refuses a file that changed in between. An archive that fails is an
// error wrapping ErrMismatch, with the report.
func Read(f io.ReadSeeker, path, prevHash string, opts ...replay.VerifyOption) (*Checked, error) {
	c := &Checked{Path: path}
	h := sha256.New()
	rep, err := replay.VerifyFile(io.TeeReader(f, h), path, prevHash, opts...)
	if err != nil {
		return nil, err
	}
	c.SHA256, c.Report = hex.EncodeToString(h.Sum(nil)), rep
	if !rep.OK {
		what := "it does not verify"
		if rep.FirstBad != nil {
			what += fmt.Sprintf(": seq %d, %s: %s", rep.FirstBad.Seq, rep.FirstBad.Kind, rep.FirstBad.Detail)
		}
		return c, fmt.Errorf("archive %s: %w: %s", path, ErrMismatch, what)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	h.Reset()
	notes, err := replay.ReadExport(io.TeeReader(f, h), func(r *replay.Row) error {
		if len(c.leaves) == 0 {
			c.FirstSeq, c.FirstPrevHash = r.Seq, r.PrevHash
		}
		c.LastSeq, c.HeadHash = r.Seq, r.Hash
		c.leaves = append(c.leaves, checkpoint.LeafHash(r.Body))
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("archive %s: %w", path, err)
	}
	if again := hex.EncodeToString(h.Sum(nil)); again != c.SHA256 {
		return c, fmt.Errorf("archive %s: %w: it changed while it was read (SHA-256 %s, then %s)", path, ErrMismatch, c.SHA256, again)
	}
	for _, n := range notes {
		s, err := checkpoint.Open(n)
		if err == nil && s.Size == c.LastSeq {
			c.LedgerID, c.Root = s.LedgerID(), s.Root
		}
	}
	if c.LedgerID == "" {
		return c, fmt.Errorf("archive %s: %w: it carries no checkpoint of its events (size %d)", path, ErrMismatch, c.LastSeq)
	}
	return c, nil
}

// Plan is ledger.Prune's plan for the archive c: in the prune's write
// transaction q (next: the marker's seq), the archive must be this
// ledger's (ledgerID), start where the live log starts, end on a stored
// checkpoint's boundary with that checkpoint's root, hold exactly the
// leaves the stored tree holds, and chain into the first event that stays.
// file is the archive's absolute path, for the marker.
func Plan(c *Checked, ledgerID, file string) func(ctx context.Context, q store.Querier, next int64) (*events.Pruned, error) {
	return func(ctx context.Context, q store.Querier, next int64) (*events.Pruned, error) {
		if c.LedgerID != ledgerID {
			return nil, c.mismatch("prune", "it is ledger %s's, this is ledger %s", c.LedgerID, ledgerID)
		}
		first, err := store.FirstSeq(ctx, q)
		if err != nil {
			return nil, err
		}
		if c.FirstSeq != first {
			return nil, c.mismatch("prune", "it starts at seq %d, the live log at seq %d", c.FirstSeq, first)
		}
		below := c.LastSeq + 1
		if _, err := Boundary(ctx, q, below, time.Time{}); err != nil {
			return nil, fmt.Errorf("prune: archive %s: %w", c.Path, err)
		}
		root, err := tlog.TreeHash(c.LastSeq, store.TreeReader(ctx, q))
		if err != nil {
			return nil, err
		}
		if root != c.Root {
			return nil, c.mismatch("prune", "its checkpoint's root at size %d is %s, the live tree's is %s", c.LastSeq, c.Root, root)
		}
		if bad, err := store.CompareLeaves(ctx, q, c.FirstSeq, c.leaves); err != nil {
			return nil, err
		} else if bad != 0 {
			return nil, c.mismatch("prune", "seq %d's leaf is not the one the live tree stores", bad)
		}
		prev, err := store.PrevHashOf(ctx, q, below)
		if err != nil {
			return nil, err
		}
		if prev != c.HeadHash {
			return nil, c.mismatch("prune", "seq %d, which stays, chains from %q, not from the archive's last hash %s", below, prev, c.HeadHash)
		}
		return &events.Pruned{FirstSeq: c.FirstSeq, LastSeq: c.LastSeq, Events: int64(len(c.leaves)), HeadHash: c.HeadHash,
			File: file, Note: events.PruneNote(c.SHA256, hex.EncodeToString(root[:]))}, nil
	}
}

// AgainstLedger adds to rep, a live ledger's verify report, what the
// archives (each already Read, in any order) say of the log before it:
// together with the live log they must be one log, from the ledger's
// genesis (the first archive from seq 1) through each archive into the
// next and into the live log's first event, the last one being the one
// the last prune recorded (its SHA-256). Problems name the archive.
func AgainstLedger(rep *verify.Report, genesis string, archives []*Checked) {
	defer rep.Finish()
	sorted := bySeq(archives)
	add := func(seq int64, kind verify.Kind, format string, args ...any) {
		rep.Add(verify.Problem{Seq: seq, Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	next, prev := int64(1), genesis
	if len(sorted) > 0 && sorted[0].FirstSeq > 1 {
		// An earlier prune's archive, not given: the first one given is
		// checked from its own first prev_hash.
		rep.Notes = append(rep.Notes, fmt.Sprintf("seq 1-%d are in an archive not given: not checked", sorted[0].FirstSeq-1))
		next, prev = sorted[0].FirstSeq, sorted[0].FirstPrevHash
	}
	for _, a := range sorted {
		if a.LedgerID != rep.LedgerID {
			add(a.FirstSeq, verify.KindCheckpoint, "archive %s is ledger %s's, not this ledger's (%s)", a.Path, a.LedgerID, rep.LedgerID)
			continue
		}
		switch {
		case a.FirstSeq > next:
			add(next, verify.KindDeleted, "no archive given holds seq %d-%d (archive %s starts at seq %d)", next, a.FirstSeq-1, a.Path, a.FirstSeq)
		case a.FirstSeq < next:
			add(a.FirstSeq, verify.KindInserted, "archive %s starts at seq %d, which an earlier archive holds", a.Path, a.FirstSeq)
		case a.FirstPrevHash != prev:
			add(a.FirstSeq, verify.KindModified, "archive %s does not chain from the event before it (%s)", a.Path, prev)
		}
		next, prev = a.LastSeq+1, a.HeadHash
	}
	live := rep.Archived
	if live == nil {
		if len(sorted) > 0 {
			rep.Notes = append(rep.Notes, "the ledger was never pruned: the archives given were checked on their own")
		}
		return
	}
	switch {
	case len(sorted) == 0:
	case next != live.BelowSeq:
		add(next, verify.KindDeleted, "the archives given end before seq %d, the live log starts at seq %d", next, live.BelowSeq)
	case prev != live.HeadHash:
		add(live.BelowSeq, verify.KindModified, "the last archive's last hash %s is not the one the live log chains from (%s)", prev, live.HeadHash)
	case sorted[len(sorted)-1].SHA256 != live.ArchiveSHA256:
		add(live.MarkerSeq, verify.KindCheckpoint, "archive %s has SHA-256 %s, the prune at seq %d recorded %s: it was rewritten since (its events still chain)",
			sorted[len(sorted)-1].Path, sorted[len(sorted)-1].SHA256, live.MarkerSeq, live.ArchiveSHA256)
	default:
		rep.Notes = append(rep.Notes, fmt.Sprintf("seq %d-%d checked in %d archive(s), the last the one the prune at seq %d recorded: archives and live ledger are one log",
			sorted[0].FirstSeq, live.BelowSeq-1, len(sorted), live.MarkerSeq))
		rep.VouchForMarker(live.MarkerSeq, "archive "+sorted[len(sorted)-1].Path+", the one it recorded and one log with the live ledger,")
	}
}

// bySeq is archives in the order of their events, for the walks that hold
// them to one log.
func bySeq(archives []*Checked) []*Checked {
	sorted := slices.Clone(archives)
	slices.SortFunc(sorted, func(a, b *Checked) int { return cmp.Compare(a.FirstSeq, b.FirstSeq) })
	return sorted
}

// Fold is the fold of every event the archives hold (State.MarshalJSON,
// for replay.FoldingFrom), read again from their files: each must still be
// the file Read checked (its SHA-256), and together they must be one log
// from seq 1, each archive chaining into the next. That they end where the
// live log starts is the live log's to check (AgainstLedger).
func Fold(archives []*Checked) ([]byte, error) {
	sorted := bySeq(archives)
	st := replay.NewState()
	next, prev := int64(1), ""
	for i, c := range sorted {
		switch {
		case c.FirstSeq != next:
			return nil, c.mismatch("fold", "it starts at seq %d: the archives given must hold every event from seq 1, and seq %d is the next", c.FirstSeq, next)
		case i > 0 && c.FirstPrevHash != prev:
			return nil, c.mismatch("fold", "it does not chain from the archive before it (%s)", prev)
		}
		if err := c.fold(st); err != nil {
			return nil, err
		}
		next, prev = c.LastSeq+1, c.HeadHash
	}
	return st.MarshalJSON()
}

// fold applies c's events, read again from its file, to st.
func (c *Checked) fold(st *replay.State) error {
	f, err := os.Open(c.Path)
	if err != nil {
		return fmt.Errorf("archive %s: %w", c.Path, err)
	}
	defer f.Close()
	h := sha256.New()
	_, err = replay.ReadExport(io.TeeReader(f, h), func(r *replay.Row) error {
		ev, err := replay.DecodeEvent(r.Seq, r.Body)
		if err != nil {
			return err
		}
		ev.Seq, ev.PrevHash, ev.Hash = r.Seq, r.PrevHash, r.Hash
		st.Apply(ev)
		return nil
	})
	if err != nil {
		return fmt.Errorf("archive %s: %w", c.Path, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != c.SHA256 {
		return c.mismatch("fold", "it changed since it was checked (SHA-256 %s, then %s)", c.SHA256, sum)
	}
	return nil
}
