package trust

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

// KeyFile is the signer key's file in the trust store.
const KeyFile = "signing.key"

// KeyPath is where the store keeps its signer key.
func (s *Store) KeyPath() string { return filepath.Join(s.dir, KeyFile) }

// Key is a signer key read from its file.
type Key struct {
	Signer   note.Signer
	Verifier string // the encoded verifier key
	Path     string
}

// Key is the store's signer key, made on first use (named KeyName()) and
// never overwritten. created says this call made it.
func (s *Store) Key() (k *Key, created bool, err error) {
	return LoadOrCreateKey(s.KeyPath(), KeyName(), 0o600, -1)
}

// LoadOrCreateKey reads the signer key at path, or makes one named name
// there (mode perm, group gid unless -1) when there is none. Two processes
// making it at once end up with the same key: it is written aside and
// linked into place, so no one ever reads half a key or replaces one.
//
// A key is read only from a regular file of this user's, or, for a group's
// key (gid not -1), of the group gid owned by this user, one of owners (the
// root's owner) or a member of the group: anyone else who could put a file
// there (a sticky directory others can write) could sign for the group.
func LoadOrCreateKey(path, name string, perm os.FileMode, gid int, owners ...int) (*Key, bool, error) {
	s, err := readKey(path, perm, gid, owners)
	if !errors.Is(err, fs.ErrNotExist) {
		return s, false, err
	}
	skey, _, err := checkpoint.GenerateKey(name)
	if err != nil {
		return nil, false, err
	}
	tmp, err := writeAside(path, []byte(skey+"\n"), func(f *os.File) (err error) {
		if gid >= 0 {
			err = f.Chown(-1, gid)
		}
		if err == nil && perm != 0o600 { // CreateTemp's own mode; a group's needs the umask undone
			err = f.Chmod(perm)
		}
		return err
	})
	if err != nil {
		return nil, false, err
	}
	defer os.Remove(tmp)
	created := true
	if err := os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		created = false
	} else if err != nil {
		return nil, false, err
	}
	s, err = readKey(path, perm, gid, owners)
	return s, created && err == nil, err
}

// readKey reads a signer key file: a regular file (never a symlink) which
// no one but its owner (and, for perm 0640, the group) can read, owned as
// LoadOrCreateKey says.
func readKey(path string, perm os.FileMode, gid int, owners []int) (*Key, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, events.Invalid("signing key", path, "is a symlink: a key file is never followed")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, events.Invalid("signing key", path, "is not a regular file")
	case st == nil:
		return nil, events.Invalid("signing key", path, "has no owner this system reports")
	case gid < 0 && int(st.Uid) != os.Geteuid():
		return nil, events.Invalid("signing key", path, fmt.Sprintf("is owned by uid %d, not by this user: whoever owns it can sign for you", st.Uid))
	case gid >= 0 && int(st.Gid) != gid:
		return nil, events.Invalid("signing key", path, fmt.Sprintf("has group %d, not the root's group %d: the group did not make it, and whoever did (uid %d) could sign for the group; remove it and write again", st.Gid, gid, st.Uid))
	case gid >= 0 && !groupOwner(int(st.Uid), gid, owners):
		return nil, events.Invalid("signing key", path, fmt.Sprintf("is owned by uid %d, who is neither this user, the root's owner, nor a member of group %d: whoever owns it could sign for the group; remove it and write again", st.Uid, gid))
	case fi.Mode().Perm()&^perm != 0:
		return nil, events.Invalid("signing key", path, fmt.Sprintf("has mode %04o: others can read or write it; it must be %04o at most", fi.Mode().Perm(), perm))
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, err
	}
	skey := strings.TrimSpace(string(b))
	s, err := checkpoint.NewSigner(skey)
	if err != nil {
		return nil, events.Invalid("signing key", path, err.Error())
	}
	return &Key{Signer: s, Verifier: checkpoint.VerifierKeyOf(s), Path: path}, nil
}

// groupOwner reports whether uid may own the signing key of group gid:
// this user, one of owners, or a member of the group by the user database.
func groupOwner(uid, gid int, owners []int) bool {
	if uid == os.Geteuid() || slices.Contains(owners, uid) {
		return true
	}
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return false
	}
	if u.Gid == strconv.Itoa(gid) {
		return true
	}
	groups, err := u.GroupIds()
	return err == nil && slices.Contains(groups, strconv.Itoa(gid))
}

// KeyName is the name of a new key: user@host/MACHINE, MACHINE being
// proc.MachineKey (16 hex digits, the machine part of the boot_id every
// holding records), with what a key name may not hold (spaces, '+', bytes
// that are not UTF-8) made '_'. Containers and clones share a user and a
// hostname; the machine part tells their keys apart in a signed note. A
// machine with no machine id gets 16 random hex digits instead. Keys made
// before keep the name they were made with.
func KeyName() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); name == "" && err == nil {
		name = u.Username
	}
	if name == "" {
		name = fmt.Sprintf("uid%d", os.Geteuid())
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return keyName(name, host, proc.MachineKey())
}

// keyName is KeyName of user on host with machine key machine ("":
// unknown).
func keyName(user, host, machine string) string {
	if machine == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err == nil {
			machine = hex.EncodeToString(b[:])
		}
	}
	base := ValidName(user + "@" + host)
	if n := 200 - len("/"+machine); len(base) > n { // the machine part is what tells hosts apart: cut the name before it
		base = base[:n]
	}
	return ValidName(base + "/" + machine)
}

// ValidName is name with each rune a key name may not hold made '_'.
func ValidName(name string) string {
	name = strings.ToValidUTF8(name, "_")
	name = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '+' || !unicode.IsPrint(r) || r == utf8.RuneError {
			return '_'
		}
		return r
	}, name)
	if len(name) > 200 {
		name = name[:200]
	}
	if !checkpoint.ValidKeyName(name) {
		return "lockledger"
	}
	return name
}
