package ledger

import (
	"log/slog"
	"os"
	"sync"

	"github.com/lockledger/lockledger/internal/proc"
)

// Host identifies this machine and the boot it is in.
type Host struct {
	ID string // host_id written into lock records (the hostname)
	// BootID is this boot of this machine as holders record it (proc.Boot:
	// MACHINE/BOOT, the boot id alone where the machine is unknown); "" where unknown.
	BootID string
	peers  *peers // set by Open
}

// peers is what judging a holder recorded under this host id needs to know
// of the store: whether other hosts share it, and where to warn (once) of
// another machine that writes under this host id.
type peers struct {
	many bool
	log  *slog.Logger
	once sync.Once
}

// HostIDEnv names this host where the hostname does not (containers that
// share one, hosts behind one name).
const HostIDEnv = "LOCKLEDGER_HOST_ID"

// ThisHost reads the host identity: LOCKLEDGER_HOST_ID, else the hostname.
func ThisHost() Host {
	name := os.Getenv(HostIDEnv)
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil || name == "" {
			name = "unknown-host"
		}
	}
	return Host{ID: name, BootID: proc.Boot()}
}
