package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
)

// SignerKeyPrefix starts an encoded signer key (note's format).
const SignerKeyPrefix = "PRIVATE+KEY+"

// ValidKeyName reports whether name can name a note key: not empty, valid
// UTF-8, no space and no '+'.
func ValidKeyName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

// GenerateKey makes an Ed25519 key pair named name: the signer key (secret)
// and the verifier key, both in note's encodings.
func GenerateKey(name string) (signer, verifier string, err error) {
	if !ValidKeyName(name) {
		return "", "", fmt.Errorf("key name %q: must be non-empty, without spaces or '+'", name)
	}
	return note.GenerateKey(rand.Reader, name)
}

// Sign signs c with s: the checkpoint text and one signature line.
func Sign(c Checkpoint, s note.Signer) ([]byte, error) {
	return note.Sign(&note.Note{Text: string(c.Text())}, s)
}

// Signed is a checkpoint read from a signed note.
type Signed struct {
	Checkpoint
	Note []byte // the signed note, verbatim
	// Keys are the names of the keys whose signatures verified; Unverified
	// those of signatures by keys not given.
	Keys       []string
	Unverified []string
	// Hashes are the key hashes of Keys, in the same order: two keys of
	// one name (a key rotated) are told apart by them.
	Hashes []uint32
}

// KeyName is the name of the first key that signed (verified, else not).
func (s *Signed) KeyName() string {
	switch {
	case len(s.Keys) > 0:
		return s.Keys[0]
	case len(s.Unverified) > 0:
		return s.Unverified[0]
	}
	return ""
}

// SignatureError: a checkpoint's signatures do not vouch for it.
type SignatureError struct {
	// Invalid: a signature by a given key does not verify (the text or
	// the signature was changed). Otherwise no signature is by a given key.
	Invalid bool
	Key     string   // the key whose signature is invalid
	Signers []string // with !Invalid: the keys that did sign
}

func (e *SignatureError) Error() string {
	if e.Invalid {
		return fmt.Sprintf("the signature by %s does not verify: the checkpoint or its signature was changed", e.Key)
	}
	if len(e.Signers) == 0 {
		return "no signature by a given verifier key"
	}
	return fmt.Sprintf("signed by %s, not by a given verifier key", strings.Join(e.Signers, ", "))
}

// Open reads a signed checkpoint and checks its signatures against
// verifiers: at least one must be by a given key, and every signature by a
// given key must verify. With no verifiers the signatures are read but not
// checked (Keys empty, Unverified naming them) and no error is returned
// for them.
func Open(msg []byte, verifiers ...note.Verifier) (*Signed, error) {
	n, err := openNote(msg, verifiers)
	var se *SignatureError
	switch {
	case errors.As(err, &se) && (se.Invalid || len(verifiers) > 0):
		return nil, err
	case err != nil && se == nil:
		return nil, fmt.Errorf("%w: not a signed note: %v", ErrMalformed, err)
	}
	c, err := ParseText([]byte(n.Text))
	if err != nil {
		return nil, err
	}
	s := &Signed{Checkpoint: c, Note: msg}
	for _, sig := range n.Sigs {
		s.Keys = append(s.Keys, sig.Name)
		s.Hashes = append(s.Hashes, sig.Hash)
	}
	for _, sig := range n.UnverifiedSigs {
		s.Unverified = append(s.Unverified, sig.Name)
	}
	return s, nil
}

// openNote opens a signed note with verifiers: a *SignatureError, with
// the note as read, when no signature is by one of them, or one by them
// does not verify.
func openNote(msg []byte, verifiers []note.Verifier) (*note.Note, error) {
	n, err := note.Open(msg, note.VerifierList(verifiers...))
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	switch {
	case errors.As(err, &unverified):
		s := &SignatureError{}
		for _, sig := range unverified.Note.UnverifiedSigs {
			s.Signers = append(s.Signers, sig.Name)
		}
		return unverified.Note, s
	case errors.As(err, &invalid):
		return nil, &SignatureError{Invalid: true, Key: invalid.Name}
	}
	return n, err
}

// NewSigner reads an encoded signer key. The signer it returns knows its
// verifier (VerifierOf) and encoded verifier key (VerifierKeyOf); the
// public key is derived from the seed once, here.
func NewSigner(key string) (note.Signer, error) {
	bad := errors.New("not a signer key (PRIVATE+KEY+NAME+HASH+KEY, as lockledger keygen writes)")
	rest, ok := strings.CutPrefix(strings.TrimSpace(key), SignerKeyPrefix)
	name, rest, _ := strings.Cut(rest, "+")
	hash16, key64, _ := strings.Cut(rest, "+")
	hash, err1 := strconv.ParseUint(hash16, 16, 32)
	raw, err2 := base64.StdEncoding.DecodeString(key64)
	if !ok || len(hash16) != 8 || err1 != nil || err2 != nil || !ValidKeyName(name) || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return nil, bad
	}
	priv := ed25519.NewKeyFromSeed(raw[1:])
	vkey, err := note.NewEd25519VerifierKey(name, priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, bad
	}
	v, err := note.NewVerifier(vkey)
	if err != nil || v.KeyHash() != uint32(hash) {
		return nil, bad
	}
	return &signerKey{name: name, hash: uint32(hash), priv: priv, vkey: vkey, verifier: v}, nil
}

// signerKey is an Ed25519 note signer that knows its verifier.
type signerKey struct {
	name     string
	hash     uint32
	priv     ed25519.PrivateKey
	vkey     string
	verifier note.Verifier
}

func (k *signerKey) Name() string                    { return k.name }
func (k *signerKey) KeyHash() uint32                 { return k.hash }
func (k *signerKey) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(k.priv, msg), nil }

// VerifierOf is the verifier of a signer NewSigner made; nil for another.
func VerifierOf(s note.Signer) note.Verifier {
	if k, ok := s.(*signerKey); ok {
		return k.verifier
	}
	return nil
}

// VerifierKeyOf is the encoded verifier key of a signer NewSigner made; ""
// for another.
func VerifierKeyOf(s note.Signer) string {
	if k, ok := s.(*signerKey); ok {
		return k.vkey
	}
	return ""
}

// NewVerifier reads an encoded verifier key.
func NewVerifier(key string) (note.Verifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(key))
	if err != nil {
		return nil, errors.New("not a verifier key (NAME+HASH+KEY, as lockledger keygen prints)")
	}
	return v, nil
}

// Entry is one signed note found in a file of several, with the line it
// starts on.
type Entry struct {
	Line int
	Note []byte
}

var sigLinePrefix = []byte("\u2014 ")

// SplitNotes splits signed notes written one after another (a witness
// file): a note ends after its signature lines (each "— NAME SIG"), which
// follow the blank line that ends its text. Empty lines between notes are
// skipped. A checkpoint's text holds no empty line, so text that a blank
// line ends and no signature follows is a note cut short (a full disk),
// and the line after it starts the next note (see Separator). Text that
// does not end in signatures is returned as an entry, for Open to reject.
func SplitNotes(data []byte) []Entry {
	var out []Entry
	var cur []byte
	start, line := 0, 0
	inSigs := false
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var l []byte
		if i < 0 {
			l, data = data, nil
		} else {
			l, data = data[:i+1], data[i+1:]
		}
		line++
		isSig := bytes.HasPrefix(l, sigLinePrefix)
		blank := len(bytes.TrimSpace(l)) == 0
		if inSigs && !isSig || !inSigs && !isSig && !blank && bytes.HasSuffix(cur, []byte("\n\n")) {
			out = append(out, Entry{Line: start, Note: cur})
			cur, inSigs = nil, false
		}
		if cur == nil && blank {
			continue
		}
		if cur == nil {
			start = line
		}
		cur = append(cur, l...)
		if isSig && bytes.HasSuffix(cur[:len(cur)-len(l)], []byte("\n\n")) {
			inSigs = true
		}
	}
	if cur != nil {
		out = append(out, Entry{Line: start, Note: cur})
	}
	return out
}

// Separator is what a note appended after tail, the end of a file of
// notes, needs before it to be read as a note of its own by SplitNotes:
// nothing after a whole note (its last signature line) or a blank line,
// and a blank line, ending the line first if need be, after anything else
// (a note cut short by a full disk where it could not be cut back), which
// would otherwise run on into the new note's text and take it with it.
func Separator(tail []byte) string {
	if len(tail) == 0 {
		return ""
	}
	if tail[len(tail)-1] != '\n' {
		return "\n\n"
	}
	last := tail[bytes.LastIndexByte(tail[:len(tail)-1], '\n')+1:]
	if len(bytes.TrimSpace(last)) == 0 || bytes.HasPrefix(last, sigLinePrefix) {
		return ""
	}
	return "\n"
}

// SignedBy reports whether msg is a checkpoint of size events of the log
// origin that signer signed, and when it was signed. Ed25519 signatures
// are deterministic: the note signer makes of the same checkpoint is msg,
// byte for byte.
func SignedBy(msg []byte, signer note.Signer, origin string, size int64) (time.Time, bool) {
	s, err := Open(msg)
	if err != nil || s.Size != size || s.Origin != origin || s.Time.IsZero() {
		return time.Time{}, false
	}
	again, err := Sign(s.Checkpoint, signer)
	if err != nil || !bytes.Equal(again, msg) {
		return time.Time{}, false
	}
	return s.Time, true
}
