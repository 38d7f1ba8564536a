package auditcmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/outfile"
	"github.com/lockledger/lockledger/trust"
)

type keygenOptions struct {
	g    *invocation.Globals
	name string
	out  string
}

var keygenListing = invocation.Listing{
	Use:   "keygen --name NAME -o FILE",
	Short: "Make the Ed25519 key that signs checkpoints; print its verifier key",
}

func NewKeygen(g *invocation.Globals) *cobra.Command {
	o := &keygenOptions{g: g}
	cmd := keygenListing.Of(&cobra.Command{
		Long: `Generate an Ed25519 key pair in the signed-note formats of
golang.org/x/mod/sumdb/note. The signer key goes to FILE (mode 0600; an
existing FILE is never overwritten); the verifier key, which auditors use
with verify --verifier-key and verify-proof, is printed.

Keep FILE where someone who can write the ledger cannot read it: another
user that only the writers run as, another host, a secrets store
(LOCKLEDGER_SIGNING_KEY may hold the key itself). A key inside the root
protects nothing, and is refused (exit 2).`,
		Example: `  lockledger keygen --name ops-ledger -o /etc/lockledger/signing.key > ops-ledger.vkey
  LOCKLEDGER_SIGNING_KEY=/etc/lockledger/signing.key lockledger checkpoint`,
		Args: invocation.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runKeygen(o) },
	})
	cmd.Flags().StringVar(&o.name, "name", "", "the key's name, shown on every signature (no spaces, no '+')")
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "file to write the signer key to (must not exist)")
	return cmd
}

func runKeygen(o *keygenOptions) error {
	if o.name == "" || !checkpoint.ValidKeyName(o.name) {
		return events.Invalid("--name", o.name, "must be non-empty, without spaces or '+'")
	}
	if o.out == "" {
		return events.Invalid("-o", o.out, "is required: the file to write the signer key to")
	}
	if trust.Within(o.g.Root, o.out) {
		return invocation.KeyInRoot("-o", o.out, o.g.Root)
	}
	vkey, err := writeKey(o)
	if errors.Is(err, fs.ErrExist) {
		return events.Invalid("-o", o.out, "already exists: keygen never overwrites a key")
	}
	if err != nil {
		return err
	}
	return o.g.Answer(map[string]string{"name": o.name, "verifier_key": vkey, "signer_key_file": o.out}, true,
		func(w io.Writer) { fmt.Fprintln(w, vkey) })
}

// writeKey makes a key, writes its signer key to a new file at o.out and
// returns its verifier key.
func writeKey(o *keygenOptions) (string, error) {
	f, err := o.g.CreateOutput("-o", o.out, outfile.NoReplace())
	if err != nil {
		return "", err
	}
	defer f.Abort()
	skey, vkey, err := checkpoint.GenerateKey(o.name)
	if err != nil {
		return "", err
	}
	if _, err := io.WriteString(f, skey+"\n"); err != nil {
		return "", err
	}
	return vkey, o.g.CommitOutput("-o", f)
}
