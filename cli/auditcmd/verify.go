package auditcmd

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/trust"
	"github.com/lockledger/lockledger/verify"
)

type verifyOptions struct {
	g           *invocation.Globals
	file        string
	prevHash    string
	full        bool
	actor       string
	clockSkew   string
	checkpoints []string
	verifiers   []string
	heads       []string
	witnessFlag bool // --witness given on the command line, not only by LOCKLEDGER_WITNESS
	witnessKeys invocation.WitnessKeyFlags
	ledgerID    string
	expect      []expectation
	pinned      bool // the trust store pins a ledger at this root
	archives    []string
	evidence    string
	signers     string           // --signers FILE
	verified    trust.Verified   // where this user's verified heads are kept
	kept        *replay.Verified // this verify's head, kept when it is OK
}

var verifyListing = invocation.Listing{
	Use:   "verify [--full] [--clock-skew D] | verify --file FILE [--prev-hash H] [--clock-skew D]  [--verifier-key KEY [--checkpoint FILE] [--witness PATH]] [--expect-head SEQ:HASH]",
	Short: "Check the database file, the hash chain, schemas, the locks table and the lock files",
}

func NewVerify(g *invocation.Globals) *cobra.Command {
	o := &verifyOptions{g: g}
	cmd := verifyListing.Of(&cobra.Command{
		Long: `Recompute the hash chain from the ledger's genesis and check, in one pass
over the events: seq contiguity, every body against its schema, the
indexed columns against the body; then that replay of all events equals
the locks table (every column of every row, held or free) and that every
lock file is what the table says. Run SQLite's PRAGMA quick_check on the
database file (--full: PRAGMA integrity_check, which also compares every
index with its table, and takes longer), and compare the append-only
triggers of the events table with the ones the migrations create.

Damage is named by kind and by the first bad seq: storage (SQLite finds
the file damaged, or reading it failed: its first messages are quoted),
swapped (another ledger's database in this root), modified, deleted,
inserted, reordered, renumbered, column_mismatch, schema, overlap (two
holders at once), inconsistent (events), truncated (the locks table
records events past the end of the log), time_backwards (an event
earlier than one before it by more than --clock-skew), future_dated (an
event dated ahead of the verifying clock, or of the events after it),
before_creation
(earlier than the ledger's created_at by more than --clock-skew),
event_id_time (the time inside event_id is not at), fencing_token (an
acquisition's token is not its own seq, or a release's is not its
holding's), trigger (missing, altered or added), then projection_drift
and lock_file_missing / _different / _extra / _unreadable /
foreign_file_at_held_lock (projections). Lock files written by other
tools are listed as foreign and are not damage. A
database too damaged to read is reported as FAILED with the read error.

Each event's stored Merkle hashes (table tlog_hashes) are recomputed from
the bodies: hashes someone edited, or left behind, are damage (merkle).

A hash chain proves order, not authorship: whoever can write ledger.db can
truncate it, re-chain it or swap in another ledger's database, and the
chain still holds. Only a head recorded outside the writer's reach shows
it. With --verifier-key KEY (the key lockledger keygen printed, or a file
holding it), the log is checked against every signed checkpoint (C2SP
tlog-checkpoint notes) of --checkpoint FILE, of each --witness PATH, and
those stored in the ledger: each must be signed by a given key, name this
ledger, and the first SIZE events must hash to its Merkle root. A
checkpoint that fails is damage (checkpoint), named with the first seq no
longer covered (the one after the largest head that still matches); an
event dated before a checkpoint that does not cover it was appended and
backdated. --expect-head SEQ:HASH checks event SEQ's chain hash against
one recorded elsewhere, without a key. Without any of them verify says
"` + verify.Unsigned + `".
Events after the last matching checkpoint are listed: nothing vouches for
them yet.

With no flags, verify uses this user's trust store (lockledger trust):
the ledger must be the one pinned at this root (else: swapped), its
checkpoint rows are checked with the pinned verifier keys, and the log
must extend the signed head kept in the store (a cut tail, a re-chain or
an older copy fails, naming the first seq no longer covered).
--verifier-key and --witness add to them; --ledger-id ID fails on any
other ledger, even one signed with the same key. A ledger nothing
vouches for gets a warning on stderr and in --json (warning).

With --witness-key VKEY (a tlog witness's cosignature key, or a file
holding one; repeatable), the cosignatures the ledger keeps of its
checkpoints (writers' --witness-url) are checked too: a cosigned
checkpoint whose root is not the log's is a split view, and fewer than
--witness-quorum of the keys (default: all) having cosigned the newest
checkpoint any of them cosigned is a failure.

With --file, check a JSON Lines export on its own, without the database:
the chain from the first line's prev_hash (or --prev-hash, e.g. the
ledger's genesis or the previous export's head), seq contiguity and
schemas, and each event's own checks above. A file that starts at seq 1
is also replayed as the ledger is (overlap, inconsistent, a release's
fencing_token): nothing comes before seq 1, so --prev-hash (the genesis)
is not needed for that, only to prove where the chain starts. A file
without a single event line (empty, or blank lines only) fails as empty.
Compare the printed head hash with one recorded elsewhere to detect a
truncated tail.
The same checkpoint options apply (the export carries the ledger's
checkpoints it covers; they count only with --verifier-key). A head given
with --checkpoint or --expect-head must be reached: a file that ends
before it, or starts after it, fails, naming the seqs it is missing. A
slice that ends before a checkpoint reaches it only through a consistency
proof the export carries from its last seq to the checkpoint's size; what
it proves is that its events are those positions of the signed log, and
nothing of the events before it. Checking a file writes nothing anywhere
and needs no key of the verifier's own. FILE is a regular file, or a pipe
given as /dev/stdin or /dev/fd/N (verify --file <(lockledger export));
anything else, a named FIFO included, is bad input.

--clock-skew (default 2s) is how far back the clock may step without
being damage: the ledger stamps events in the order it appends them, so
at goes back only when the host's clock was stepped back (NTP, a VM
resumed, by hand) or an event was backdated. A step is measured from the
latest time already recorded, and reported once. Widen the tolerance for
a host whose clock is known to have jumped (project checks the log with
the default).

A verify that finds the ledger intact keeps its head in this user's
trust store (verified/ in the trust directory: the last event's seq and
hash, the Merkle tree's frontier there, the replayed state, its events'
times and a digest of the snapshots up to it), and the next plain verify
of the ledger at this root checks only the events after it: they must
chain from that hash, the tree from that frontier (so every checkpoint
signed since is checked against the log verified before), and replay
goes on from that state to the locks table, the lock files and the
snapshots stored after the head as always; of the database file only the
append-only triggers are checked. A log that no longer holds that event
(cut, or restored from an older copy) or holds another one there
(rewritten, re-chained) fails; snapshots up to the head other than those
found then, or a kept head that cannot be used, make it check the whole
log. What it does not read is the events before that head: one edited
in place since is found by a check of the whole log, which --full makes (and with it
SQLite's integrity_check), as does any verify given --verifier-key,
--checkpoint, --expect-head, --signers, --witness, --witness-key or
--archive (the daily lockledger-verify.timer passes --verifier-key). The
report says which ran: "checked: incremental, after seq N" (--json:
check, verified_from).

Exit 0 only when everything holds, 1 otherwise.

Reading the audit log is itself recorded: after the check, verify appends
a ledger_verified event (ok or failed, the problem count, the first bad
seq, the events and head hash checked, the export file with --file, who
ran it). The report is of the log as it was read, without that event:
the next verify sees one more event and a new head hash. The event takes
the ledger's writer lock for a moment; where the root is read-only, or
writers hold the lock past 2s, verify still reports and exits as it
would, and says on stderr that it could not record itself. A verify that
fails records ledger_verified (failed) unsigned: no checkpoint is stored
for it and the head the trust store keeps does not move, so the record of
the damage never vouches for the damaged log. A verify of a
signed ledger that this user has not pinned, without the signers' key,
says its checkpoints went unchecked, and records itself unsigned, making
no key and pinning nothing. With --file nothing is recorded.`,
		Example: `  lockledger verify
  lockledger verify --verifier-key ops-ledger.vkey --witness /mnt/audit/ledger.checkpoints
  lockledger verify --expect-head 1200:3f5c...e1   # a head written down earlier
  lockledger verify --json | jq .first_bad
  lockledger verify --full      # the whole log, and every index against its table
  lockledger export -o audit.jsonl && lockledger verify --file audit.jsonl`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.witnessFlag = cmd.Flags().Changed("witness")
			return runVerify(cmd.Context(), o)
		},
	})
	cmd.Flags().StringVar(&o.file, "file", "", "check this JSON Lines export instead of the ledger")
	cmd.Flags().StringVar(&o.prevHash, "prev-hash", "", "with --file: the hash the first line must chain from")
	cmd.Flags().BoolVar(&o.full, "full", false, "check the whole log from genesis, not only the events after the head this user verified last, and run SQLite's integrity_check (every index against its table) instead of its quick_check")
	cmd.Flags().StringVar(&o.actor, "actor", "", "who verifies, as recorded (default $LOCKLEDGER_ACTOR, else $USER, else the OS user name)")
	cmd.Flags().StringVar(&o.clockSkew, "clock-skew", replay.DefaultClockSkew.String(),
		"how far an event's at may fall behind an earlier event's or the ledger's creation (90s, 1m or plain seconds)")
	cmd.Flags().StringArrayVar(&o.checkpoints, "checkpoint", nil, "check the log against the signed checkpoints in FILE (needs --verifier-key; repeatable)")
	cmd.Flags().StringArrayVar(&o.verifiers, "verifier-key", nil, "a verifier key (keygen prints it), or a file holding one or more, one a line: checkpoints must be signed by one (repeatable)")
	cmd.Flags().StringVar(&o.ledgerID, "ledger-id", "", "the ledger this must be: any other fails (swapped), even one signed with the same key")
	cmd.Flags().StringArrayVar(&o.heads, "expect-head", nil, "SEQ:HASH: event SEQ's hash must be HASH (a head recorded elsewhere, without a key; repeatable)")
	cmd.Flags().StringVar(&o.signers, "signers", "", "FILE of the ledger's signer keys, one a line (its owner's signer list --keys): checkpoints of these keys, and of every key they register, vouch for the log; verify then makes no key of its own")
	cmd.Flags().StringArrayVar(&o.archives, "archive", nil, "also check this archive (lockledger archive) and the live ledger as one log (repeatable)")
	cmd.Flags().StringVar(&o.evidence, "evidence", "", "check this evidence bundle (lockledger evidence) alone, with --verifier-key; writes nothing")
	o.witnessKeys.Register(cmd)
	return cmd
}

// trust gathers what the log is checked against: the checkpoints of
// --checkpoint files and --witness paths, those the ledger (or the
// export) carries, the verifier keys and the expected heads.
func (o *verifyOptions) trust(ctx context.Context) (*replay.Trust, error) {
	t := &replay.Trust{Witnesses: map[string]int{}}
	var err error
	if o.file == "" {
		if err := o.keysOutsideRoot(len(o.verifiers) > 0); err != nil {
			return nil, err
		}
	}
	if t.Verifiers, err = verifierKeys(ctx, "--verifier-key", o.verifiers); err != nil {
		return nil, err
	}
	if o.signers != "" {
		keys, err := signerSetFile(ctx, o.signers)
		if err != nil {
			return nil, err
		}
		t.Verifiers = append(t.Verifiers, keys...)
	}
	t.Expected = len(t.Verifiers) > 0
	if o.ledgerID != "" {
		if err := validLedgerIDFlag(o.ledgerID); err != nil {
			return nil, err
		}
		o.expect = append(o.expect, expectation{id: o.ledgerID, source: "--ledger-id"})
	}
	if o.file == "" {
		t.OthersUnchecked = len(t.Verifiers) == 0
		if err := o.fromStore(t); err != nil {
			return nil, err
		}
		// The pinned keys make verify read LOCKLEDGER_WITNESS too.
		if err := o.keysOutsideRoot(len(t.Verifiers) > 0); err != nil {
			return nil, err
		}
	}
	if err := o.witnessKeys.Add(ctx, o.g.Root, o.file == "", t); err != nil {
		return nil, err
	}
	for _, h := range o.heads {
		seqText, hash, ok := strings.Cut(h, ":")
		hash = strings.ToLower(hash) // verify prints lower case; a copy may not be
		seq, serr := strconv.ParseInt(seqText, 10, 64)
		if !ok || serr != nil || seq < 1 || !isChainHash(hash) {
			return nil, events.Invalid("--expect-head", h, "must be SEQ:HASH, an event's seq and its 64 hex digit hash (as verify prints the head)")
		}
		t.Heads = append(t.Heads, replay.Head{Seq: seq, Hash: hash})
	}
	for _, f := range o.checkpoints {
		b, err := invocation.ReadFile(ctx, "--checkpoint", f, invocation.NoLimit)
		if err != nil {
			return nil, err
		}
		es := checkpoint.SplitNotes(b)
		if len(es) == 0 {
			return nil, events.Invalid("--checkpoint", f, "holds no checkpoint")
		}
		for _, e := range es {
			t.Checkpoints = append(t.Checkpoints, replay.NoteSource{Source: fmt.Sprintf("checkpoint %s:%d", f, e.Line), Note: e.Note, Given: true})
		}
	}
	witnesses := o.g.Sign.Witnesses
	if len(t.Verifiers) == 0 && !o.witnessFlag {
		// LOCKLEDGER_WITNESS, set for the writers, asks nothing of a
		// verify without keys.
		witnesses = nil
	}
	for _, w := range witnesses {
		t.Witnesses[w] = 0
		ns, err := witnessNotes(ctx, w)
		if err != nil {
			return nil, err
		}
		t.Checkpoints = append(t.Checkpoints, ns...)
	}
	if len(t.Checkpoints) > 0 && len(t.Verifiers) == 0 {
		return nil, &invocation.UsageError{Err: fmt.Errorf("verify: --checkpoint and --witness need --verifier-key: a checkpoint whose signature is not checked vouches for nothing")}
	}
	return t, nil
}

// keysOutsideRoot refuses a --verifier-key file or a --witness inside the
// root, as the writers refuse theirs: whoever can rewrite the ledger could
// replace them to vouch for the rewrite.
func (o *verifyOptions) keysOutsideRoot(keyed bool) error {
	for _, v := range o.verifiers {
		if _, err := checkpoint.NewVerifier(v); err != nil && trust.Within(o.g.Root, v) {
			return invocation.KeyInRoot("--verifier-key", v, o.g.Root)
		}
	}
	if o.signers != "" && trust.Within(o.g.Root, o.signers) {
		return invocation.KeyInRoot("--signers", o.signers, o.g.Root)
	}
	if !o.witnessFlag && !keyed {
		return nil // LOCKLEDGER_WITNESS is not read without a key
	}
	for _, w := range o.g.Sign.Witnesses {
		if err := invocation.WitnessOutsideRoot(o.g.Root, w); err != nil {
			return err
		}
	}
	return nil
}

// witnessNotes reads a witness: every checkpoint of a file, or of each
// file in a directory. A witness that is gone holds none (verify says so).
func witnessNotes(ctx context.Context, path string) ([]replay.NoteSource, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []replay.NoteSource
	_, err := readNoteFiles(ctx, "--witness", path, func(f string, inDir bool, es []checkpoint.Entry) error {
		for _, e := range es {
			src := "checkpoint " + f
			if !inDir || len(es) > 1 {
				src = fmt.Sprintf("checkpoint %s:%d", f, e.Line)
			}
			out = append(out, replay.NoteSource{Source: src, Note: e.Note, Witness: path})
		}
		return nil
	})
	return out, err
}

// readNoteFiles calls fn with the signed notes of the file at path or,
// when path is a directory (a witness), of each regular file in it; it
// reports whether path is a directory.
func readNoteFiles(ctx context.Context, field, path string, fn func(file string, inDir bool, es []checkpoint.Entry) error) (bool, error) {
	files, inDir := []string{path}, false
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return true, events.Invalid(field, path, "cannot be read: "+invocation.ErrText(err))
		}
		files, inDir = nil, true
		for _, e := range ents {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	for _, f := range files {
		b, err := invocation.ReadFile(ctx, field, f, invocation.NoLimit)
		if err != nil {
			return inDir, err
		}
		if err := fn(f, inDir, checkpoint.SplitNotes(b)); err != nil {
			return inDir, err
		}
	}
	return inDir, nil
}

func runVerify(ctx context.Context, o *verifyOptions) error {
	skew, err := invocation.ParseDuration("--clock-skew", o.clockSkew)
	if err != nil {
		return err
	}
	if o.evidence != "" {
		return verifyEvidence(ctx, o, replay.ClockSkew(skew))
	}
	var rep *verify.Report
	switch {
	case o.file != "" && o.full:
		return &invocation.UsageError{Err: fmt.Errorf("verify: --full checks the ledger's database, not a --file export")}
	case o.file != "" && len(o.archives) > 0:
		return &invocation.UsageError{Err: fmt.Errorf("verify: --archive checks an archive with the ledger; check one alone with --file")}
	case o.file == "" && o.prevHash != "":
		return &invocation.UsageError{Err: fmt.Errorf("verify: --prev-hash needs --file")}
	}
	if err := invocation.ValidActor(o.actor); err != nil {
		return err
	}
	trust, err := o.trust(ctx)
	if err != nil {
		return err
	}
	if o.file != "" {
		var f *os.File
		if f, err = openExport(o.file); err != nil {
			return err
		}
		defer f.Close()
		rep, err = replay.VerifyExport(invocation.Waiting(ctx, f), o.file, o.prevHash, o.ledgerID, trust, replay.ClockSkew(skew))
	} else {
		opts := []ledger.VerifyOption{ledger.AllowClockSkew(skew), ledger.CheckAgainst(trust)}
		if o.full {
			opts = append(opts, ledger.FullStorageCheck())
		}
		opts, err = o.verifiedHeads(trust, opts)
		if err != nil {
			return err
		}
		rep, err = o.g.Verify(ctx, opts...)
		if err == nil && len(o.archives) > 0 {
			err = o.withArchives(rep, trust, replay.ClockSkew(skew))
		}
	}
	if err != nil {
		return err
	}
	o.checkExpected(rep)
	o.keepVerified(rep)
	warning := ""
	signed := carriedUnchecked(rep, trust)
	switch {
	case signed > 0 && o.file != "":
		rep.Trust = fmt.Sprintf("not checked: the export carries %d signed checkpoints, and no --verifier-key was given to check them", signed)
		warning = "the export's signatures were not checked: give --verifier-key KEY (`lockledger trust show` on the writer's host prints it)"
	case signed > 0:
		rep.Trust = fmt.Sprintf("not checked: the ledger holds %d signed checkpoints, and no key pinned at this root or given with --verifier-key checks them", signed)
		warning = "the ledger's signatures were not checked: give --verifier-key KEY, the signers' key from the ledger's owner (`lockledger trust show` on a writer's host prints it)"
	case unvouched(rep) > 0:
		// Signed, but no checkpoint verifies with the keys at hand (the
		// problems say why of each): the advice is about the key, not
		// about writing without --unsigned.
		rep.Trust = fmt.Sprintf("not vouched for: none of the %d checkpoints verifies with a key given or pinned (the problems say why)", unvouched(rep))
		warning = "no checkpoint verifies with the keys given with --verifier-key or pinned at this root: check that the key is the one " +
			"writes at the ledger's root sign with (`lockledger trust show` there prints it)"
	case rep.Trust == verify.Unsigned && rep.Events > 0:
		warning = unsignedWarning
	}
	if warning != "" {
		o.g.Sayf("warning: %s", warning)
	}
	if o.signers != "" && !o.pinned {
		// An auditor given the signer set has no key of its own to make:
		// its record is appended unsigned, pinning nothing.
		o.g.Sign.Unsigned = true
	}
	if (!rep.OK || signed > 0) && !o.pinned && o.g.Trusting() {
		// A ledger that fails verify is not trusted on first use, nor one
		// signed by keys this user does not hold (an auditor's verify):
		// its record is appended unsigned, making no key and pinning
		// nothing.
		o.g.Sign.Unsigned = true
	}
	var recorded int64
	if o.file == "" {
		// Recorded after the read, which it never changes: the report
		// stays that of the log as it was read. A file is checked on its
		// own: an auditor's check writes nothing, to whatever root is set,
		// and needs no key of the auditor's own.
		recorded = o.g.RecordAccess(ctx, "verify", events.LedgerVerified, o.actor, verified(rep, o.file))
	}
	return o.g.Answer(struct {
		*verify.Report
		Check    string `json:"check,omitempty"`
		Recorded int64  `json:"recorded,omitempty"`
		Warning  string `json:"warning,omitempty"`
	}{rep, o.checkKind(rep), recorded, warning}, rep.OK, func(w io.Writer) {
		printReport(w, rep)
		if recorded > 0 {
			termtext.Fprintf(w, "  recorded: ledger_verified, seq %d (after the events checked: the next verify checks it too)\n", recorded)
		}
	})
}

// verified is ledger_verified's record of a report: only what the
// schema can carry (a damaged export may claim any seq or hash).
func verified(rep *verify.Report, file string) *events.Verified {
	v := &events.Verified{Result: events.AuditOK, Events: rep.Events, Problems: rep.ProblemCount}
	if !rep.OK {
		v.Result = events.AuditFailed
	}
	if rep.FirstBad != nil && rep.FirstBad.Seq > 0 {
		v.FirstBadSeq = rep.FirstBad.Seq
	}
	if rep.Events > 0 && rep.FirstSeq > 0 && rep.LastSeq > 0 {
		v.FirstSeq, v.LastSeq = rep.FirstSeq, rep.LastSeq
	}
	if isChainHash(rep.HeadHash) {
		v.HeadHash = rep.HeadHash
	}
	if file != "" {
		v.File = invocation.AbsPath(file)
	}
	return v
}

// isChainHash: 64 lower-case hex digits, as every hash the ledger writes.
func isChainHash(h string) bool {
	_, err := hex.DecodeString(h)
	return len(h) == 64 && err == nil && strings.ToLower(h) == h
}

// exportRule is what --file accepts.
const exportRule = "must be a regular file (an export lockledger export wrote), or a pipe this process was given " +
	"as /dev/stdin or /dev/fd/N (`verify --file <(lockledger export)`); a FIFO by any other name is refused: " +
	"opening one that no process writes waits for ever"

// openExport opens --file: a regular file, opened as openInput opens one
// (O_NONBLOCK: a FIFO there is refused at once, never waited on), or a
// descriptor this process inherited, named by /dev/stdin, /dev/fd/N or
// /proc/self/fd/N, which is read as it is (duplicated, not opened again:
// the shell opened it, and a pipe's writer is the shell's to start).
func openExport(path string) (*os.File, error) {
	if fd, ok := inheritedFD(path); ok {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		f := os.NewFile(uintptr(dup), path)
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() && fi.Mode().Type() != fs.ModeNamedPipe {
			f.Close()
			return nil, events.Invalid("--file", path, exportRule)
		}
		return f, nil
	}
	f, _, err := outfile.OpenRegular(path, os.O_RDONLY, 0)
	if errors.Is(err, outfile.ErrNotRegular) {
		return nil, events.Invalid("--file", path, exportRule)
	}
	if err != nil {
		// A file that is not there fails the check (exit 1), as it
		// always has; the message names the flag as the other inputs' do.
		return nil, fmt.Errorf("--file %q: cannot be read: %s", path, invocation.ErrText(err))
	}
	return f, nil
}

// inheritedFD is the descriptor path names in this process's table:
// /dev/stdin, /dev/fd/N, /proc/self/fd/N.
func inheritedFD(path string) (int, bool) {
	if path == "/dev/stdin" {
		return 0, true
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/"} {
		if n, ok := strings.CutPrefix(path, dir); ok {
			fd, err := strconv.Atoi(n)
			return fd, err == nil && fd >= 0 && strconv.Itoa(fd) == n
		}
	}
	return 0, false
}

func printReport(w io.Writer, rep *verify.Report) {
	if rep.OK {
		fmt.Fprintln(w, "verify: OK")
	} else {
		termtext.Fprintf(w, "verify: FAILED (%d %s)\n", rep.ProblemCount, termtext.Plural(rep.ProblemCount, "problem", "problems"))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	termtext.Fprintf(tw, "  source\t%s\n", rep.Source)
	if f := rep.From; f != nil {
		termtext.Fprintf(tw, "  checked\tincremental: the events after seq %d, the head this user's verify found intact on %s (verify --full checks the whole log)\n",
			f.Seq, f.At.UTC().Format(time.RFC3339))
	}
	if rep.LedgerID != "" {
		termtext.Fprintf(tw, "  ledger id\t%s\n", rep.LedgerID)
	}
	switch {
	case rep.Unreadable:
		termtext.Fprintf(tw, "  events\tunreadable (see the problems)\n")
	case rep.Events == 0 && rep.From != nil:
		termtext.Fprintf(tw, "  events\tnone after seq %d, which a verify found intact on %s\n", rep.From.Seq, rep.From.At.UTC().Format(time.RFC3339))
	case rep.Events == 0:
		termtext.Fprintf(tw, "  events\tnone\n")
	default:
		termtext.Fprintf(tw, "  events\t%d (seq %d-%d)\n", rep.Events, rep.FirstSeq, rep.LastSeq)
		from := "prev_hash " + rep.FirstPrevHash
		if f := rep.From; f != nil {
			from = fmt.Sprintf("seq %d's hash %s, which a verify found intact on %s", f.Seq, f.Hash, f.At.UTC().Format(time.RFC3339))
		} else if a := rep.Archived; a != nil {
			from = fmt.Sprintf("seq %d's hash %s (archived below seq %d: archive sha256 %s, ledger_pruned at seq %d)",
				a.BelowSeq-1, a.HeadHash, a.BelowSeq, a.ArchiveSHA256, a.MarkerSeq)
		} else if rep.Genesis != "" {
			from = "genesis " + rep.Genesis
		}
		termtext.Fprintf(tw, "  chain from\t%s\n", from)
		termtext.Fprintf(tw, "  head hash\t%s\n", rep.HeadHash)
	}
	switch {
	case rep.Unreadable:
		termtext.Fprintf(tw, "  projection\tnot checked: the events could not be replayed\n")
	case rep.Archived != nil:
		termtext.Fprintf(tw, "  projection\tnot checked: replay needs the archived events\n")
	case rep.Genesis != "":
		termtext.Fprintf(tw, "  projection\t%d locks replayed, %d lock files checked\n", rep.Locks, rep.LockFiles)
	case rep.Replayed:
		termtext.Fprintf(tw, "  replay\t%d locks replayed from seq 1: overlaps, consistency and release tokens checked\n", rep.Locks)
	case rep.Events > 0 && rep.FirstSeq != 1:
		termtext.Fprintf(tw, "  replay\tnot checked: the file starts at seq %d, and replay needs every event from seq 1\n", rep.FirstSeq)
	}
	if rep.Trust != "" {
		termtext.Fprintf(tw, "  signed\t%s\n", rep.Trust)
	}
	if len(rep.Checkpoints) > 0 {
		termtext.Fprintf(tw, "  checkpoints\t%s\n", checkpointCounts(rep.Checkpoints))
	}
	if rep.FirstBad != nil {
		termtext.Fprintf(tw, "  first bad\t%s\n", problemText(*rep.FirstBad))
	}
	tw.Flush()
	if len(rep.Problems) > 0 {
		fmt.Fprintln(w, "  problems:")
		for _, p := range rep.Problems {
			termtext.Fprintf(w, "    %s\n", problemText(p))
		}
		if n := rep.ProblemCount - len(rep.Problems); n > 0 {
			termtext.Fprintf(w, "    ... and %d more (see --json)\n", n)
		}
	}
	if len(rep.Foreign) > 0 {
		fmt.Fprintln(w, "  lock files the ledger does not hold (not damage):")
		for _, p := range rep.Foreign {
			termtext.Fprintf(w, "    %s: %s\n", p.Lock, p.Detail)
		}
	}
	for _, n := range rep.Notes {
		termtext.Fprintf(w, "  note: %s\n", n)
	}
}

func problemText(p verify.Problem) string {
	var where, about []string
	switch {
	case p.Seq > 0 && p.Kind.Chain():
		where = append(where, fmt.Sprintf("seq %d", p.Seq))
		if p.Lock != "" {
			about = append(about, "lock "+p.Lock)
		}
	case p.Lock != "":
		where = append(where, "lock "+p.Lock)
	}
	if p.Line > 0 {
		about = append(about, fmt.Sprintf("line %d", p.Line))
	}
	if len(about) > 0 {
		where = append(where, "("+strings.Join(about, ", ")+")")
	}
	if len(where) == 0 {
		return fmt.Sprintf("%s: %s", p.Kind, p.Detail)
	}
	return fmt.Sprintf("%s %s: %s", strings.Join(where, " "), p.Kind, p.Detail)
}

// checkpointCounts summarises what verify made of the checkpoints: how
// many had each result (the problems name the ones that failed).
func checkpointCounts(cs []*verify.CheckpointResult) string {
	n := map[string]int{}
	var order []string
	for _, c := range cs {
		if n[c.Result] == 0 {
			order = append(order, c.Result)
		}
		n[c.Result]++
	}
	parts := make([]string, len(order))
	for i, r := range order {
		parts[i] = fmt.Sprintf("%d %s", n[r], r)
	}
	return fmt.Sprintf("%d: %s", len(cs), strings.Join(parts, ", "))
}
