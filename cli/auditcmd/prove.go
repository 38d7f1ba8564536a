package auditcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// latestCheckpoint reads the largest checkpoint in a file, signatures not
// checked (the proof carries it; verify-proof checks them). A directory
// is a witness: the largest checkpoint of ledger id in its files (a
// witness may keep several ledgers').
func latestCheckpoint(ctx context.Context, field, path, id string) (*checkpoint.Signed, error) {
	var best *checkpoint.Signed
	inDir, err := readNoteFiles(ctx, field, path, func(f string, inDir bool, es []checkpoint.Entry) error {
		for _, n := range es {
			s, err := checkpoint.Open(n.Note)
			if err != nil {
				return events.Invalid(field, fmt.Sprintf("%s:%d", f, n.Line), err.Error())
			}
			if (!inDir || id == "" || s.LedgerID() == id) && (best == nil || s.Size > best.Size) {
				best = s
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case best == nil && inDir:
		return nil, events.Invalid(field, path, "holds no checkpoint of this ledger")
	case best == nil:
		return nil, events.Invalid(field, path, "holds no checkpoint")
	}
	return best, nil
}

func forThisLedger(field, path string, s *checkpoint.Signed, l *ledger.Ledger) error {
	if s.LedgerID() != l.ID() {
		return fmt.Errorf("%s %s: a checkpoint of %s, but the ledger at %s is %s", field, path, s.Origin, l.Root(), checkpoint.Origin(l.ID()))
	}
	return nil
}

type proveOptions struct {
	g          *invocation.Globals
	checkpoint string
}

var proveListing = invocation.Listing{
	Use:   "prove event SEQ --checkpoint FILE | prove extends OLD NEW",
	Short: "Prove from the ledger that an event is in a checkpoint, or that a checkpoint extends an older one",
}

func NewProve(g *invocation.Globals) *cobra.Command {
	cmd := proveListing.Of(&cobra.Command{
		Long: `Print RFC 6962 proofs computed from the ledger's stored Merkle hashes,
for an auditor who keeps only checkpoints (signed notes, as witnesses
hold them):

  prove event SEQ --checkpoint FILE   inclusion: event SEQ is in FILE's tree
                                      (the largest checkpoint in FILE)
  prove extends OLD NEW               consistency: NEW's tree starts with
                                      OLD's events, unchanged

A proof carries its checkpoints (and the event's canonical body), so
lockledger verify-proof checks it offline, and any RFC 6962 tool can
check its audit path or consistency hashes (--json: leaf_index,
tree_size, audit_path; first, second, consistency). A ledger that no
longer hashes to the checkpoint's root cannot prove anything against it:
exit 1 (lockledger verify says where it differs). prove only reads.`,
		Example: `  lockledger prove event 42 --checkpoint /mnt/audit/ledger.checkpoints > seq42.proof
  lockledger prove extends march.checkpoint april.checkpoint --json
  lockledger verify-proof seq42.proof --verifier-key ops-ledger.vkey`,
	})
	o := &proveOptions{g: g}
	ev := &cobra.Command{
		Use:   "event SEQ --checkpoint FILE",
		Short: "Prove that event SEQ is in a checkpoint's tree",
		Args:  invocation.ArgCount(func(n int) bool { return n == 1 }, "prove event: takes exactly one SEQ"),
		RunE:  func(cmd *cobra.Command, args []string) error { return runProveEvent(cmd.Context(), o, args[0]) },
	}
	ev.Flags().StringVar(&o.checkpoint, "checkpoint", "", "file holding the checkpoint (the largest in it is used), or a witness directory (its largest of this ledger)")
	ext := &cobra.Command{
		Use:   "extends OLD NEW",
		Short: "Prove that checkpoint NEW extends checkpoint OLD",
		Args:  invocation.ArgCount(func(n int) bool { return n == 2 }, "prove extends: takes the OLD and NEW checkpoint files"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProveExtends(cmd.Context(), g, args[0], args[1])
		},
	}
	cmd.AddCommand(ev, ext)
	return cmd
}

func runProveEvent(ctx context.Context, o *proveOptions, seqArg string) error {
	seq, err := strconv.ParseInt(seqArg, 10, 64)
	if err != nil || seq < 1 {
		return events.Invalid("SEQ", seqArg, "must be an event's seq, a whole number from 1")
	}
	if o.checkpoint == "" {
		return events.Invalid("--checkpoint", "", "is required: the checkpoint to prove the event against")
	}
	return o.g.Reading(ctx, func(r *invocation.Reader) error {
		cp, err := latestCheckpoint(ctx, "--checkpoint", o.checkpoint, r.Ledger.ID())
		if err != nil {
			return err
		}
		if seq > cp.Size {
			return events.Invalid("SEQ", seqArg, fmt.Sprintf("is beyond the checkpoint, which covers seq 1-%d", cp.Size))
		}
		if err := forThisLedger("--checkpoint", o.checkpoint, cp, r.Ledger); err != nil {
			return err
		}
		path, err := checkpoint.ProveInclusion(seq, cp.Checkpoint, store.TreeReader(ctx, r.Tx))
		if err != nil {
			return fmt.Errorf("prove: %w", err)
		}
		var body []byte
		if err := replay.ScanRows(ctx, r.Tx, replay.Filter{FromSeq: seq, ToSeq: seq}, func(row *replay.Row) error {
			body = row.Body
			return nil
		}); err != nil {
			return err
		}
		if body == nil {
			if n := invocation.ArchivedNote(ctx, r); n != "" {
				return fmt.Errorf("prove: seq %d is not in the live log: %s; its stored Merkle path is unchanged, but the proof carries the event's body, which the archive holds", seq, n)
			}
		}
		// The stored tree matched the checkpoint: the event's body must hash
		// to the leaf the path starts from, or its stored hashes lie.
		if err := tlog.CheckRecord(path, cp.Size, cp.Root, checkpoint.Index(seq), checkpoint.LeafHash(body)); err != nil {
			return fmt.Errorf("prove: seq %d's body is not the leaf the stored tree holds for it (%v); run lockledger verify", seq, err)
		}
		p := &checkpoint.InclusionProof{Origin: cp.Origin, Seq: seq, LeafIndex: checkpoint.Index(seq), TreeSize: cp.Size,
			RootHash: cp.Root, LeafHash: checkpoint.LeafHash(body), AuditPath: path, Checkpoint: string(cp.Note)}
		if json.Valid(body) {
			p.Body = json.RawMessage(body)
		}
		return printProof(o.g, p)
	})
}

func runProveExtends(ctx context.Context, g *invocation.Globals, oldPath, newPath string) error {
	older, err := latestCheckpoint(ctx, "OLD", oldPath, "")
	if err != nil {
		return err
	}
	newer, err := latestCheckpoint(ctx, "NEW", newPath, "")
	if err != nil {
		return err
	}
	if older.Size > newer.Size {
		return events.Invalid("OLD", oldPath, fmt.Sprintf("covers %d events, more than NEW (%d): give the older checkpoint first", older.Size, newer.Size))
	}
	return g.Reading(ctx, func(r *invocation.Reader) error {
		if err := forThisLedger("OLD", oldPath, older, r.Ledger); err != nil {
			return err
		}
		if err := forThisLedger("NEW", newPath, newer, r.Ledger); err != nil {
			return err
		}
		tp, err := checkpoint.ProveConsistency(older.Checkpoint, newer.Checkpoint, store.TreeReader(ctx, r.Tx))
		if err != nil {
			return fmt.Errorf("prove: %w", err)
		}
		return printProof(g, &checkpoint.ConsistencyProof{Origin: newer.Origin, First: older.Size, Second: newer.Size,
			FirstRoot: older.Root, SecondRoot: newer.Root, Consistency: tp,
			OldCheckpoint: string(older.Note), NewCheckpoint: string(newer.Note)})
	})
}

func printProof(g *invocation.Globals, p interface{ Text() ([]byte, error) }) error {
	if g.JSON {
		invocation.WriteJSON(g.IO.Out, p)
		return nil
	}
	b, err := p.Text()
	if err != nil {
		return err
	}
	_, err = g.IO.Out.Write(b)
	return err
}

// --- verify-proof ---

type verifyProofOptions struct {
	g         *invocation.Globals
	verifiers []string
}

var verifyProofListing = invocation.Listing{
	Use:   "verify-proof [FILE] [--verifier-key KEY]...",
	Short: "Check a proof from lockledger prove, offline",
}

func NewVerifyProof(g *invocation.Globals) *cobra.Command {
	o := &verifyProofOptions{g: g}
	cmd := verifyProofListing.Of(&cobra.Command{
		Long: `Check an inclusion or consistency proof (text or --json form, from FILE
or standard input) without the ledger: the checkpoints' signatures with
each --verifier-key (the key text, or a file holding it), that the proof
is for their sizes and roots, the audit path (tlog.CheckRecord) or the
consistency hashes (tlog.CheckTree), and that the event's body hashes to
the proven leaf.

Without --verifier-key the signatures are not checked and the output says
so: the proof then only shows that the hashes agree. Exit 0 when the
proof holds, 1 when it does not, 2 when the input is no proof.`,
		Example: `  lockledger verify-proof seq42.proof --verifier-key ops-ledger.vkey`,
		Args:    invocation.ArgCount(func(n int) bool { return n <= 1 }, "verify-proof: takes at most one FILE"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runVerifyProof(cmd.Context(), o, args) },
	})
	cmd.Flags().StringArrayVar(&o.verifiers, "verifier-key", nil, "a verifier key (keygen prints it), or a file holding one or more, one a line (repeatable)")
	return cmd
}

// verifierKeys reads verifier keys given as text or as files, a file
// holding one or more.
func verifierKeys(ctx context.Context, field string, vals []string) ([]note.Verifier, error) {
	var out []note.Verifier
	for _, v := range vals {
		vrs, err := invocation.KeysOrFile(ctx, field, v, verifierKeyWhat, checkpoint.NewVerifier)
		if err != nil {
			return nil, err
		}
		out = append(out, vrs...)
	}
	return out, nil
}

// verifierKeyWhat is what a verifier key is, for a refusal.
const verifierKeyWhat = "a verifier key (NAME+HASH+KEY, as keygen and trust export print it)"

// verifierKeyText reads a verifier key given as field: the key itself, or
// a file holding one. It returns the key's text and its verifier.
func verifierKeyText(ctx context.Context, field, val string) (string, note.Verifier, error) {
	return invocation.KeyOrFile(ctx, field, val, verifierKeyWhat, checkpoint.NewVerifier)
}

type proofResult struct {
	OK               bool     `json:"ok"`
	Type             string   `json:"type"`
	Origin           string   `json:"origin,omitempty"`
	Seq              int64    `json:"seq,omitempty"`
	TreeSize         int64    `json:"tree_size,omitempty"`
	First            int64    `json:"first,omitempty"`
	Second           int64    `json:"second,omitempty"`
	Keys             []string `json:"keys"`
	SignatureChecked bool     `json:"signature_checked"`
	Error            string   `json:"error,omitempty"`
}

func runVerifyProof(ctx context.Context, o *verifyProofOptions, args []string) error {
	vs, err := verifierKeys(ctx, "--verifier-key", o.verifiers)
	if err != nil {
		return err
	}
	path, name := "-", "standard input"
	if len(args) == 1 && args[0] != "-" {
		path, name = args[0], args[0]
	}
	data, err := o.g.ReadInput(ctx, "FILE", path, 64<<20, false)
	if err != nil {
		return err
	}
	parsed, err := checkpoint.ParseProof(data)
	if err != nil {
		return events.Invalid("FILE", name, err.Error())
	}
	res := proofResult{Keys: []string{}, SignatureChecked: len(vs) > 0}
	var cerr error
	switch p := parsed.(type) {
	case *checkpoint.InclusionProof:
		res.Type, res.Origin, res.Seq, res.TreeSize = "inclusion", p.Origin, p.Seq, p.TreeSize
		var s *checkpoint.Signed
		if s, cerr = p.Check(vs...); cerr == nil {
			res.Keys = keysOf(s, len(vs) > 0)
			if len(p.Body) > 0 {
				body, err := events.Canonical(p.Body)
				switch {
				case err != nil:
					cerr = fmt.Errorf("the body is not JSON: %w", err)
				case checkpoint.LeafHash(body) != p.LeafHash:
					cerr = errors.New("the event's body does not hash to the proven leaf: the body was changed")
				}
			}
		}
	case *checkpoint.ConsistencyProof:
		res.Type, res.Origin, res.First, res.Second = "consistency", p.Origin, p.First, p.Second
		var older, newer *checkpoint.Signed
		if older, newer, cerr = p.Check(vs...); cerr == nil {
			res.Keys = keysOf(older, len(vs) > 0)
			for _, k := range keysOf(newer, len(vs) > 0) {
				if !slices.Contains(res.Keys, k) {
					res.Keys = append(res.Keys, k)
				}
			}
		}
	}
	res.OK = cerr == nil
	if cerr != nil {
		res.Error = cerr.Error()
	}
	return o.g.Answer(res, res.OK, func(w io.Writer) { printProofResult(w, res, parsed) })
}

func keysOf(s *checkpoint.Signed, verified bool) []string {
	if verified {
		return s.Keys
	}
	return s.Unverified
}

func printProofResult(w io.Writer, res proofResult, p any) {
	if !res.OK {
		termtext.Fprintf(w, "verify-proof: FAILED: %s\n", res.Error)
		return
	}
	fmt.Fprintln(w, "verify-proof: OK")
	switch res.Type {
	case "inclusion":
		termtext.Fprintf(w, "  proves      seq %d (leaf index %d) is in the tree of %d events\n", res.Seq, res.Seq-1, res.TreeSize)
		if ip := p.(*checkpoint.InclusionProof); len(ip.Body) > 0 {
			var env events.Envelope
			if json.Unmarshal(ip.Body, &env) == nil {
				termtext.Fprintf(w, "  event       %s on %s by %s at %s\n", env.Type, env.LockName, env.Actor, env.At)
			}
		}
	case "consistency":
		termtext.Fprintf(w, "  proves      the tree of %d events starts with the tree of %d, unchanged\n", res.Second, res.First)
	}
	termtext.Fprintf(w, "  origin      %s\n", res.Origin)
	if res.SignatureChecked {
		termtext.Fprintf(w, "  signed by   %s (verified)\n", strings.Join(res.Keys, ", "))
	} else {
		termtext.Fprintf(w, "  signatures  NOT checked (no --verifier-key): the hashes agree, but nothing shows who signed (claimed: %s)\n", strings.Join(res.Keys, ", "))
	}
}
