package ledger

import (
	"os"
	"sync"

	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/termtext"
)

// maxUserName is the longest user name an event records (its schema's maxLength).
const maxUserName = 256

// osUser is who the kernel says runs this process: its real user id and
// that user's name ("" when the system has none). Every event records them
// beside the self-declared actor. Looked up once per process: the name
// lookup reads the user database.
var osUser = sync.OnceValues(func() (int, string) {
	uid := os.Getuid()
	return uid, termtext.Clip(proc.UserName(uid), maxUserName)
})
