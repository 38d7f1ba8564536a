package invocation

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/trust"
	"github.com/lockledger/lockledger/verify"
	"github.com/lockledger/lockledger/witness/tlogwitness"
)

// Witnesses off the machine (c2sp.org/tlog-witness): writers send each
// checkpoint they sign to every --witness-url and keep the cosignatures;
// verify checks them with --witness-key.

// witnessURLFlags are the writers' --witness-url, and those
// LOCKLEDGER_WITNESS_URL gives.
type witnessURLFlags struct {
	urls, env []string
}

// registerWitnessURLs adds the writers' --witness-url.
func (f *signFlags) registerWitnessURLs(pf *pflag.FlagSet) {
	f.witnessURLs.env = strings.Fields(os.Getenv("LOCKLEDGER_WITNESS_URL"))
	pf.StringArrayVar(&f.witnessURLs.urls, "witness-url", f.witnessURLs.env,
		"URL=VKEY: writers send each checkpoint they sign to this tlog witness (c2sp.org/tlog-witness) and keep its cosignature,\n"+
			"checked with its verifier key VKEY (repeatable; env LOCKLEDGER_WITNESS_URL, URL=VKEY pairs separated by spaces)")
}

// cosigners are the witnesses of --witness-url.
func (g *Globals) cosigners() ([]*tlogwitness.Witness, error) {
	var out []*tlogwitness.Witness
	for _, s := range g.Sign.witnessURLs.urls {
		u, vkey, ok := strings.Cut(s, "=")
		if !ok {
			return nil, events.Invalid("--witness-url", s, "must be URL=VKEY: the witness's URL and its verifier key")
		}
		v, err := tlogwitness.NewVerifier(vkey)
		if err != nil {
			return nil, events.Invalid("--witness-url", s, err.Error())
		}
		w, err := tlogwitness.New(u, v)
		if err != nil {
			return nil, events.Invalid("--witness-url", s, err.Error())
		}
		out = append(out, w)
	}
	return out, nil
}

// writerCosigners are the witnesses of --witness-url for a writer. A
// --witness-url without a key to sign what it cosigns is refused;
// LOCKLEDGER_WITNESS_URL, set for the writers, asks nothing of a process
// without one (an auditor's verify), as LOCKLEDGER_WITNESS does not.
func (g *Globals) writerCosigners(signing bool) ([]*tlogwitness.Witness, error) {
	f := g.Sign.witnessURLs
	if len(f.urls) == 0 || (!signing && slices.Equal(f.urls, f.env)) {
		return nil, nil
	}
	if !signing {
		return nil, events.Invalid("--witness-url", f.urls[0], "needs signed checkpoints, and writes are --unsigned: a witness cosigns signed checkpoints")
	}
	return g.cosigners()
}

// WitnessKeyFlags are verify's --witness-key and --witness-quorum.
type WitnessKeyFlags struct {
	keys   []string
	quorum string
}

func (f *WitnessKeyFlags) Register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.keys, "witness-key", nil,
		"a tlog witness's verifier key, or a file holding one: the ledger's cosignatures by it are checked against the log (repeatable)")
	cmd.Flags().StringVar(&f.quorum, "witness-quorum", "", "how many of the --witness-key witnesses must have cosigned the newest checkpoint any of them cosigned (default: all)")
}

// Add puts the witness keys and the quorum in t.
func (f *WitnessKeyFlags) Add(ctx context.Context, root string, checkRoot bool, t *replay.Trust) error {
	for _, k := range f.keys {
		if _, err := tlogwitness.NewVerifier(k); err != nil && checkRoot && trust.Within(root, k) {
			return KeyInRoot("--witness-key", k, root)
		}
		_, v, err := KeyOrFile(ctx, "--witness-key", k, "a witness verifier key (NAME+HASH+KEY)", tlogwitness.NewVerifier)
		if err != nil {
			return err
		}
		t.Cosigners = append(t.Cosigners, note.Verifier(v))
	}
	if f.quorum != "" {
		q, err := strconv.Atoi(f.quorum)
		if err != nil || q < 1 || q > len(f.keys) {
			return events.Invalid("--witness-quorum", f.quorum, fmt.Sprintf("must be a whole number from 1 to the number of --witness-key given (%d)", len(f.keys)))
		}
		t.Quorum = q
	}
	if len(t.Cosigners) > 0 {
		t.Expected = true
	}
	return nil
}

// Verify is the ledger's Verify in the one read snapshot of a reading
// command.
func (g *Globals) Verify(ctx context.Context, opts ...ledger.VerifyOption) (rep *verify.Report, err error) {
	err = g.Reading(ctx, func(r *Reader) error {
		rep, err = r.Ledger.Verify(ctx, append(opts, ledger.InSnapshot(r.Tx))...)
		return err
	})
	return rep, err
}
