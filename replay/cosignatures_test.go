package replay_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
	"github.com/lockledger/lockledger/witness/tlogwitness"
)

// cosigner makes cosignature/v1 signatures (c2sp.org/tlog-cosignature),
// as a witness does.
type cosigner struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
}

func newCosigner(t *testing.T, name string) (*cosigner, note.Verifier) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := append([]byte{4}, pub...)
	h := sha256.Sum256(append([]byte(name+"\n"), k...))
	c := &cosigner{name: name, hash: binary.BigEndian.Uint32(h[:]), key: priv}
	v, err := tlogwitness.NewVerifier(fmt.Sprintf("%s+%08x+%s", name, c.hash, base64.StdEncoding.EncodeToString(k)))
	if err != nil {
		t.Fatal(err)
	}
	return c, v
}

func (c *cosigner) Name() string    { return c.name }
func (c *cosigner) KeyHash() uint32 { return c.hash }
func (c *cosigner) Sign(msg []byte) ([]byte, error) {
	const at = 1795611116
	m := append(fmt.Appendf(nil, "cosignature/v1\ntime %d\n", at), msg...)
	return append(binary.BigEndian.AppendUint64(nil, at), ed25519.Sign(c.key, m)...), nil
}

// cosign is c's cosignature of a signed checkpoint, as the ledger keeps it.
func cosign(t *testing.T, c *cosigner, head replay.NoteSource, source string) replay.NoteSource {
	t.Helper()
	s, err := checkpoint.Open(head.Note)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := note.Sign(&note.Note{Text: string(s.Text())}, c)
	if err != nil {
		t.Fatal(err)
	}
	return replay.NoteSource{Source: source, Note: msg, Carried: true}
}

// TestVerifyChecksCosignaturesTheQuorumAndSplitViews: witness a cosigned
// sizes 10 and 20, witness b only 10. With both keys and the default
// quorum (all), the newest cosigned checkpoint lacks b; with a quorum of
// one it holds. A cosignature whose checkpoint was changed is invalid, and
// one of another tree at size 10 is a split view.
func TestVerifyChecksCosignaturesTheQuorumAndSplitViews(t *testing.T) {
	s, _ := keys(t, "ops")
	a, va := newCosigner(t, "witness.example/a")
	b, vb := newCosigner(t, "witness.example/b")
	g := treeLog(t, 20)
	heads := signedHeads(t, g, s, 10, 20)
	cos := []replay.NoteSource{cosign(t, a, heads[0], "ledger cosignature #1"), cosign(t, b, heads[0], "ledger cosignature #2"), cosign(t, a, heads[1], "ledger cosignature #3")}
	trust := func(quorum int, cs ...replay.NoteSource) replay.VerifyOption {
		return replay.WithTrust(&replay.Trust{LedgerID: "overlap-test", Cosigners: []note.Verifier{va, vb}, Quorum: quorum, Cosignatures: cs, Expected: true})
	}
	onlyProblem(t, verifyTree(t, g, trust(0, cos...)), verify.KindCheckpoint, 11, "only 1 of the 2 witness keys", "size 20: witness.example/a", "the quorum is 2")
	if rep := verifyTree(t, g, trust(1, cos...)); !rep.OK || !strings.Contains(rep.Trust, "seq 1-20 match the checkpoint of size 20 that witness witness.example/a cosigned") {
		t.Fatalf("a quorum of one: %+v (trust %q)", rep.Problems, rep.Trust)
	}
	if rep := verifyTree(t, g, trust(0)); rep.OK || !strings.Contains(rep.FirstBad.Detail, "no cosignature by the witness keys given") {
		t.Fatalf("no cosignature: %+v", rep.Problems)
	}

	changed := cos[2]
	changed.Note = []byte(strings.Replace(string(changed.Note), "\n20\n", "\n19\n", 1))
	rep := verifyTree(t, g, trust(1, cos[0], cos[1], changed))
	if rep.OK || !strings.Contains(fmt.Sprint(rep.Problems), "ledger cosignature #3 is not a valid cosignature") {
		t.Fatalf("a changed cosignature: %+v", rep.Problems)
	}

	other := treeLog(t, 12) // another log with the same origin: another tree at size 10
	split := cosign(t, b, signedHeads(t, other, s, 10)[0], "ledger cosignature #4")
	onlyProblem(t, verifyTree(t, g, trust(1, cos[0], cos[2], split)), verify.KindCheckpoint, 1,
		"the checkpoint of size 10 that witness witness.example/b cosigned (ledger cosignature #4)", "split view", "the first 10 events hash to")
}

// TestVerifyNamesTheCheckpointsAWitnessDidNotCosign: the ledger keeps
// checkpoints at 5, 10, 15 and 20; witness a cosigned 10, witness b none.
// With a quorum of one the log verifies, and the report names, per
// witness, the checkpoints past the last one it cosigned.
func TestVerifyNamesTheCheckpointsAWitnessDidNotCosign(t *testing.T) {
	s, v := keys(t, "ops")
	a, va := newCosigner(t, "witness.example/a")
	_, vb := newCosigner(t, "witness.example/b")
	g := treeLog(t, 20)
	heads := signedHeads(t, g, s, 5, 10, 15, 20)
	for i := range heads {
		heads[i].Source, heads[i].Carried, heads[i].Row, heads[i].Size = fmt.Sprintf("ledger checkpoint #%d", i+1), true, true, int64(5*(i+1))
	}
	rep := verifyTree(t, g, replay.WithTrust(&replay.Trust{LedgerID: "overlap-test", Checkpoints: heads, Verifiers: []note.Verifier{v},
		Cosigners: []note.Verifier{va, vb}, Quorum: 1, Cosignatures: []replay.NoteSource{cosign(t, a, heads[1], "ledger cosignature #1")}, Expected: true}))
	if !rep.OK {
		t.Fatalf("problems %+v", rep.Problems)
	}
	want := []verify.Uncosigned{{Witness: "witness.example/a", Cosigned: 10, Count: 2, Sizes: []int64{15, 20}},
		{Witness: "witness.example/b", Count: 4, Sizes: []int64{5, 10, 15, 20}}}
	if !reflect.DeepEqual(rep.Uncosigned, want) {
		t.Fatalf("uncosigned %#v, want %#v", rep.Uncosigned, want)
	}
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{
		"witness witness.example/a did not cosign 2 checkpoints of this ledger (size 15, 20); the last it cosigned is of size 10",
		"witness witness.example/b did not cosign 4 checkpoints of this ledger (size 5, 10, 15, 20); it cosigned none",
	} {
		if !strings.Contains(notes, want) {
			t.Fatalf("notes do not say %q:\n%s", want, notes)
		}
	}
}
