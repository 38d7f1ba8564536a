// Package verify holds what verify reports: the kinds of damage, each
// problem found, and the report that collects them. replay, archive, the
// storage checks and the command line all write into one Report.
package verify

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockledger/lockledger/internal/termtext"
)

// Kind names a kind of damage that verify reports.
type Kind string

// Damage to the event log itself (each names a seq).
const (
	// KindModified: a row's hash does not match its seq, prev_hash and body
	// (the body, the prev_hash or the hash column changed), or a row was
	// rewritten with a recomputed hash and its successor no longer chains
	// from it.
	KindModified Kind = "modified"
	// KindDeleted: events are missing (a gap in seq, or rows renumbered to
	// close one). Seq names the first missing position.
	KindDeleted Kind = "deleted"
	// KindInserted: a row that is not part of the original chain: a second
	// row claiming an original seq already seen, or a last row that does
	// not chain from its predecessor.
	KindInserted Kind = "inserted"
	// KindReordered: rows are intact but sit at the wrong positions.
	KindReordered Kind = "reordered"
	// KindRenumbered: an intact row's seq is not the seq its hash covers
	// (the seq in its body), and no deletion, insertion or reordering
	// explains the shift: the row, or the file from there on, was relabelled.
	KindRenumbered Kind = "renumbered"
	// KindColumnMismatch: an indexed column (event_id, type, lock_name,
	// request_id, actor, at, seq) disagrees with the hashed body.
	KindColumnMismatch Kind = "column_mismatch"
	// KindSchema: a body with a valid hash that is not a valid event.
	KindSchema Kind = "schema"
	// KindMalformed: an export line that is not an export line at all.
	KindMalformed Kind = "malformed"
	// KindInconsistent: an event the ledger would never have appended in the
	// state replay reached (a forged event with a recomputed chain).
	KindInconsistent Kind = "inconsistent"
	// KindOverlap: a lock_acquired while another request still held the
	// lock, neither released nor stolen from: an instant with two holders.
	KindOverlap Kind = "overlap"
	// KindTruncated: events at the end of the log are gone: the locks table
	// records an update by an event past the last one (seq is the first
	// missing). A tail cut without such a trace needs a checkpoint to show.
	KindTruncated Kind = "truncated"
	// KindTimeBackwards: an event's at is earlier than an earlier event's
	// by more than the clock tolerance (ClockSkew). The ledger stamps
	// events in the order it appends them, so only a clock stepped back by
	// more than that, or an event backdated and the log re-chained,
	// explains it. One finding per step back.
	KindTimeBackwards Kind = "time_backwards"
	// KindFutureDated: an event's at is ahead of the verifying clock, or
	// of the events after it while the events before it agree with them,
	// by more than the clock tolerance: the event is dated ahead, not its
	// successor behind. One finding per run of such events.
	KindFutureDated Kind = "future_dated"
	// KindBeforeCreation: an event's at is earlier than the ledger's
	// created_at (the meta table) by more than the clock tolerance. One
	// finding per run of such events.
	KindBeforeCreation Kind = "before_creation"
	// KindEventIDTime: the time inside event_id (a ULID, to the
	// millisecond) is not at's. The ledger makes both from one reading of
	// the clock, so they differ only when one was rewritten without the
	// other (e.g. an event backdated and re-chained).
	KindEventIDTime Kind = "event_id_time"
	// KindFencingToken: a lock_acquired or lock_stolen whose fencing_token
	// is not its own seq (the ledger gives every acquisition its seq, which
	// is what makes tokens increase), or a lock_released whose
	// fencing_token is not the token of the holder it releases.
	KindFencingToken Kind = "fencing_token"
	// KindEmpty: an export file without a single line. An empty export
	// proves nothing, and one emptied by accident or on purpose must not
	// pass for a good one.
	KindEmpty Kind = "empty"
)

// Damage to the projections (each names a lock).
const (
	// KindProjectionDrift: the locks table disagrees with replay of the events.
	KindProjectionDrift Kind = "projection_drift"
	// KindLockFileMissing: the ledger holds the lock but its file is gone.
	KindLockFileMissing Kind = "lock_file_missing"
	// KindLockFileDifferent: the lock file is the ledger's holder's, but not
	// the bytes the ledger wrote.
	KindLockFileDifferent Kind = "lock_file_different"
	// KindLockFileExtra: a file of the ledger's for a lock the ledger does not hold.
	KindLockFileExtra Kind = "lock_file_extra"
	// KindForeignAtHeld: another tool's lock file sits where the ledger holds a lock.
	KindForeignAtHeld Kind = "foreign_file_at_held_lock"
	// KindLockFileUnreadable: a lock path that is not a regular file the
	// ledger can read (a symlink, a directory, no permission), or a locks
	// directory that is not a directory; the other locks are still checked.
	KindLockFileUnreadable Kind = "lock_file_unreadable"
)

// Damage to a stored shortcut (each names a seq).
const (
	// KindSnapshot: a stored snapshot of the folded state (table
	// snapshots) is not the fold of the events up to its seq, or does not
	// hash to what it recorded. Readers do not fold from such a snapshot.
	KindSnapshot Kind = "snapshot"
)

// Damage to the database itself (no seq, no lock).
const (
	// KindStorage: SQLite finds the database file malformed (its
	// quick_check or integrity_check), or reading it failed.
	KindStorage Kind = "storage"
	// KindTrigger: a trigger that keeps a table append-only is missing or
	// is not the one the migrations create, or a trigger nobody created is
	// there.
	KindTrigger Kind = "trigger"
	// KindSwapped: the database is another ledger's than the one this root
	// records (writer.flock names a different ledger id).
	KindSwapped Kind = "swapped"
)

// KindForeign marks a lock file the ledger never wrote, at a lock the
// ledger does not hold: reported for information, not damage.
const KindForeign Kind = "foreign"

// Chain reports whether k is damage to the event log (as opposed to the projections).
func (k Kind) Chain() bool {
	switch k {
	case KindModified, KindDeleted, KindInserted, KindReordered, KindRenumbered, KindColumnMismatch, KindSchema, KindMalformed,
		KindInconsistent, KindOverlap, KindTruncated, KindTimeBackwards, KindFutureDated, KindBeforeCreation, KindEventIDTime, KindFencingToken, KindEmpty,
		KindMerkle, KindCheckpoint:
		return true
	}
	return false
}

// Damage to the log the Merkle tree and the heads recorded elsewhere show (each names a seq).
const (
	// KindMerkle: the stored Merkle hashes (table tlog_hashes) disagree
	// with the events: edited, missing, or left behind by events that are
	// gone. Seq is the first event whose hashes disagree.
	KindMerkle Kind = "merkle"
	// KindCheckpoint: the log does not match a head recorded elsewhere (a
	// signed checkpoint, an expected head), or a checkpoint itself is not
	// what was signed. Seq is the first seq that no longer matches: the one
	// after the largest head that still does.
	KindCheckpoint Kind = "checkpoint"
)

// Unsigned is what verify says when nothing it was given can vouch for
// the log.
const Unsigned = "unsigned: truncation and re-chaining are not detectable"

// Problem is one finding.
type Problem struct {
	Seq    int64  `json:"seq,omitempty"`
	Kind   Kind   `json:"kind"`
	Lock   string `json:"lock_name,omitempty"`
	Line   int64  `json:"line,omitempty"` // export files: the line number
	Detail string `json:"detail"`
}

// MaxProblems bounds how many problems a report lists; it counts them all.
const MaxProblems = 200

// Report is what verify found.
type Report struct {
	OK     bool   `json:"ok"`
	Source string `json:"source"`
	// LedgerID and Genesis anchor a ledger's chain; a file slice has neither.
	LedgerID string `json:"ledger_id,omitempty"`
	Genesis  string `json:"genesis,omitempty"`
	Events   int64  `json:"events"`
	FirstSeq int64  `json:"first_seq,omitempty"`
	LastSeq  int64  `json:"last_seq,omitempty"`
	// FirstPrevHash is the hash the first row chains from: the genesis for
	// a whole ledger, the predecessor's hash for a slice.
	FirstPrevHash string `json:"first_prev_hash,omitempty"`
	// HeadHash is the last row's hash: compare it with a head recorded
	// elsewhere to detect truncation of the tail, which no chain can show.
	HeadHash string `json:"head_hash,omitempty"`
	// Unreadable: reading the events failed (a storage problem says why);
	// the counts are not the ledger's and the projections went unchecked.
	Unreadable bool `json:"unreadable,omitempty"`
	// Replayed: the log was replayed from seq 1 with an intact chain, and
	// replay's own checks (overlap, inconsistent, a release's fencing
	// token) ran. An export slice that does not start at seq 1 cannot be.
	Replayed bool `json:"replayed,omitempty"`
	// Locks is the number of locks replayed; LockFiles the lock files checked.
	Locks     int `json:"locks_replayed"`
	LockFiles int `json:"lock_files_checked"`
	// FirstBad is the first damage: a malformed database file first (it
	// explains whatever else is found), then the lowest seq of damage to the
	// log, then a missing or altered trigger, then the first projection
	// problem.
	FirstBad     *Problem  `json:"first_bad"`
	Problems     []Problem `json:"problems"`
	ProblemCount int       `json:"problem_count"`
	// Foreign lists lock files the ledger never wrote, left alone (not damage).
	Foreign []Problem `json:"foreign,omitempty"`
	// Notes are remarks that are not damage (e.g. a write in flight).
	Notes []string `json:"notes,omitempty"`
	// From: the check read only the events after this head, which an
	// earlier verify by this user found intact (an incremental verify);
	// nil when it read the whole log.
	From *From `json:"verified_from,omitempty"`
	// Archived: the events below Archived.BelowSeq were pruned into an
	// archive (a ledger_pruned marker says so); the live log starts there.
	Archived *Archived `json:"archived,omitempty"`
	// Trust says what vouches for the log beyond its own chain: Unsigned
	// when nothing does, else the seqs that match a signed checkpoint or an
	// expected head. UnsignedFrom is the first seq no matching head covers.
	Trust        string              `json:"trust"`
	UnsignedFrom int64               `json:"unsigned_from,omitempty"`
	Checkpoints  []*CheckpointResult `json:"checkpoints,omitempty"`
	// Uncosigned: per witness key given, the checkpoints it did not
	// cosign (not damage; see Uncosigned).
	Uncosigned []Uncosigned `json:"uncosigned,omitempty"`
	// markers are the problems of prune and unprune markers no trusted key
	// signs, by seq, for an archive given to vouch for (VouchForMarker).
	markers map[int64]Problem
}

// VouchForMarker withdraws the problem of the unsigned prune marker at
// seq, if verify reported one, saying in a note that how vouches for it:
// an archive that checks out as one log with the live ledger and is the
// one the marker recorded holds every event the prune removed, so the
// marker hides nothing, whoever wrote it (lockledger before prunes had to
// be signed wrote markers no checkpoint of their size signs). It reports
// whether there was a problem to withdraw; call Finish after.
func (r *Report) VouchForMarker(seq int64, how string) bool {
	p, ok := r.markers[seq]
	if !ok {
		return false
	}
	delete(r.markers, seq)
	if i := slices.Index(r.Problems, p); i >= 0 {
		r.Problems = slices.Delete(r.Problems, i, i+1)
	}
	r.ProblemCount--
	r.Notes = append(r.Notes, fmt.Sprintf("the prune marker at seq %d is signed by no key verify trusts, and %s vouches for it", seq, how))
	return true
}

// Add records a problem (a KindForeign one as information).
func (r *Report) Add(p Problem) {
	if p.Kind == KindForeign {
		r.Foreign = append(r.Foreign, p)
		return
	}
	r.ProblemCount++
	if len(r.Problems) < MaxProblems {
		r.Problems = append(r.Problems, p)
	}
}

// ReadFailure records that reading what was being checked (the events,
// the locks table, the schema's triggers) failed: a database too damaged
// to read is a report, not a crash. ctx's own end is returned instead.
func (r *Report) ReadFailure(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.Add(Problem{Kind: KindStorage, Detail: fmt.Sprintf("reading %s failed: %v", what, err)})
	return nil
}

// rank orders the kinds of damage in a report (see Report.FirstBad).
func (k Kind) rank() int {
	switch {
	case k == KindStorage || k == KindSwapped:
		return 0
	case k.Chain():
		return 1
	case k == KindTrigger:
		return 2
	}
	return 3
}

// Finish orders the problems (storage, log damage by seq, triggers, then
// projection damage), sets FirstBad and OK.
func (r *Report) Finish() {
	slices.SortStableFunc(r.Problems, func(a, b Problem) int {
		if c := cmp.Compare(a.Kind.rank(), b.Kind.rank()); c != 0 || !a.Kind.Chain() {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	r.FirstBad = nil
	if len(r.Problems) > 0 {
		p := r.Problems[0]
		r.FirstBad = &p
	}
	if r.Problems == nil {
		r.Problems = []Problem{}
	}
	r.OK = r.ProblemCount == 0
}

// CheckpointResult is what verify made of one checkpoint.
type CheckpointResult struct {
	Source  string    `json:"source"`
	Size    int64     `json:"size,omitempty"`
	Key     string    `json:"key,omitempty"`
	Time    time.Time `json:"time,omitzero"`
	Carried bool      `json:"carried,omitempty"`
	// Result: "matches", "does not match", "beyond the log" (truncated),
	// "not checked" (no verifier key), "invalid" (signature, origin, text).
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// From is the head an incremental verify started after: event Seq, its
// chain hash, and when the verify that found it intact ran.
type From struct {
	Seq  int64     `json:"seq"`
	Hash string    `json:"hash"`
	At   time.Time `json:"at"`
}

// Archived is where a pruned ledger's live log starts: the last
// ledger_pruned marker, which names the archive holding the events before.
type Archived struct {
	// BelowSeq: events below it are in archives, not in the live store.
	BelowSeq int64 `json:"below_seq"`
	// FirstSeq..BelowSeq-1 are in the archive the last prune checked.
	FirstSeq      int64  `json:"first_seq"`
	ArchiveSHA256 string `json:"archive_sha256"`
	// HeadHash is seq BelowSeq-1's chain hash, Root the tree's root at
	// size BelowSeq-1 (hex).
	HeadHash  string `json:"head_hash"`
	Root      string `json:"root"`
	MarkerSeq int64  `json:"marker_seq"`
}

// MaxUncosignedSizes caps the sizes an Uncosigned lists.
const MaxUncosignedSizes = 100

// Uncosigned is what one witness key did not cosign: the checkpoints the
// ledger (or the export) keeps that match the log, past the largest one
// the witness cosigned. Writers ask the witnesses after their write has
// committed, and a witness that was slow or unreachable leaves the write
// standing: this is not damage, but nothing from that witness vouches
// for the events past Cosigned.
type Uncosigned struct {
	Witness  string  `json:"witness"`
	Cosigned int64   `json:"cosigned"` // the largest size it cosigned (0: none)
	Count    int     `json:"count"`
	Sizes    []int64 `json:"sizes"` // ascending, the first MaxUncosignedSizes
}

func (u Uncosigned) String() string {
	shown := make([]string, 0, 10)
	for _, s := range u.Sizes[:min(len(u.Sizes), 10)] {
		shown = append(shown, fmt.Sprint(s))
	}
	if u.Count > len(shown) {
		shown = append(shown, fmt.Sprintf("and %d more", u.Count-len(shown)))
	}
	last := "it cosigned none"
	if u.Cosigned > 0 {
		last = fmt.Sprintf("the last it cosigned is of size %d", u.Cosigned)
	}
	return fmt.Sprintf("witness %s did not cosign %d %s of this ledger (size %s); %s: it was slow or unreachable when they were signed, or the writer had no --witness-url for it",
		u.Witness, u.Count, termtext.Plural(u.Count, "checkpoint", "checkpoints"), strings.Join(shown, ", "), last)
}

// SetMarker records p as the problem of the unsigned prune or unprune
// marker at seq, which an archive may vouch for (VouchForMarker).
func (r *Report) SetMarker(seq int64, p Problem) {
	if r.markers == nil {
		r.markers = map[int64]Problem{}
	}
	r.markers[seq] = p
}
