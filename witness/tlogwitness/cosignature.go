// Package tlogwitness is a client of witnesses that are not on this
// machine: it sends a signed checkpoint with a consistency proof to a
// witness's add-checkpoint endpoint (c2sp.org/tlog-witness) and checks
// the cosignature it returns (c2sp.org/tlog-cosignature, cosignature/v1).
// A witness cosigns a tree only if it extends every tree of the log it
// cosigned before, so a log rewritten under it is refused, and a
// cosignature kept by the ledger shows later which tree the witness saw.
//
// docs/architecture.md shows where this package sits among the others.
package tlogwitness

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/store"
)

// algCosignatureV1 is the key type byte of a cosignature/v1 key.
const algCosignatureV1 = 4

// ErrKey: text that is not a cosignature/v1 verifier key.
var ErrKey = errors.New("not a witness verifier key (NAME+HASH+KEY, an Ed25519 cosignature/v1 key, type 0x04)")

// Verifier checks the cosignatures of one witness key. It is a
// note.Verifier: a cosignature line is a note signature whose bytes are
// the key hash, the time it was made (8 bytes, big-endian Unix seconds)
// and an Ed25519 signature of "cosignature/v1\ntime T\n" and the
// checkpoint text.
type Verifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
	vkey string
}

// NewVerifier reads a witness's verifier key (NAME+HASH+BASE64, the
// base64 of 0x04 and the 32-byte Ed25519 public key), as litewitness and
// other tlog witnesses publish it.
func NewVerifier(vkey string) (*Verifier, error) {
	vkey = strings.TrimSpace(vkey)
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	hash, err1 := strconv.ParseUint(hash16, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(key64)
	if !ok1 || !ok2 || len(hash16) != 8 || err1 != nil || err2 != nil || !checkpoint.ValidKeyName(name) ||
		len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignatureV1 {
		return nil, ErrKey
	}
	if uint32(hash) != keyHash(name, key) {
		return nil, fmt.Errorf("%w: its hash is not the hash of its name and key", ErrKey)
	}
	return &Verifier{name: name, hash: uint32(hash), key: ed25519.PublicKey(key[1:]), vkey: vkey}, nil
}

// Name is the witness key's name, which its cosignature lines carry.
func (v *Verifier) Name() string { return v.name }

// KeyHash is the key's hash, which starts each of its signatures.
func (v *Verifier) KeyHash() uint32 { return v.hash }

// String is the verifier key as given.
func (v *Verifier) String() string { return v.vkey }

// Verify checks sig (the timestamp and the Ed25519 signature) over the
// checkpoint text msg.
func (v *Verifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	if t > math.MaxInt64 {
		return false
	}
	return ed25519.Verify(v.key, signedMessage(t, msg), sig[8:])
}

// signedMessage is what a cosignature/v1 signs.
func signedMessage(t uint64, text []byte) []byte {
	return append(fmt.Appendf(nil, "cosignature/v1\ntime %d\n", t), text...)
}

func keyHash(name string, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// Cosignature is one witness's cosignature of a checkpoint, as the
// ledger keeps it.
type Cosignature = store.Cosignature

// ErrNoCosignature: no cosignature line by the given key verifies.
var ErrNoCosignature = errors.New("no valid cosignature by the witness key")

// Open checks the signature lines sigs (as a witness returns them, or the
// signature lines of a note) over the checkpoint text with v, and returns
// v's cosignature. Lines by other keys are ignored.
func Open(text, sigs []byte, v *Verifier) (*Cosignature, error) {
	n, err := note.Open(slices.Concat(text, []byte{'\n'}, sigs), note.VerifierList(v))
	var unverified *note.UnverifiedNoteError
	if errors.As(err, &unverified) {
		return nil, ErrNoCosignature
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCosignature, err)
	}
	sig := n.Sigs[0]
	raw, err := base64.StdEncoding.DecodeString(sig.Base64)
	if err != nil || len(raw) != 4+8+ed25519.SignatureSize {
		return nil, ErrNoCosignature
	}
	at := time.Unix(int64(binary.BigEndian.Uint64(raw[4:12])), 0).UTC()
	c, err := checkpoint.ParseText(text)
	if err != nil {
		return nil, err
	}
	line := fmt.Sprintf("\u2014 %s %s\n", sig.Name, sig.Base64)
	return &Cosignature{Witness: v.name, Key: v.vkey, Time: at, Size: c.Size, Root: c.Root,
		Note: append(append(bytes.Clone(text), '\n'), line...)}, nil
}

// OpenNote checks a cosignature as Cosignature.Note keeps it.
func OpenNote(msg []byte, v *Verifier) (*Cosignature, error) {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	if i < 0 {
		return nil, fmt.Errorf("%w: not a signed note", ErrNoCosignature)
	}
	return Open(msg[:i+1], msg[i+2:], v)
}
