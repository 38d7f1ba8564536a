package ledger

import (
	"log/slog"
	"sync"
	"time"

	"github.com/lockledger/lockledger/internal/hostid"
	"github.com/lockledger/lockledger/internal/proc"
)

// Host identifies this machine and the boot it is in.
type Host struct {
	ID     string    // host_id written into lock records (the hostname)
	BootID string    // this boot of this machine, as proc.Boot records it; "" where unknown
	Booted time.Time // when this boot began (proc.BootTime); zero where unknown
	PIDNS  *int64    // this process's PID namespace (proc.PIDNamespace)
	peers  *peers    // set by Open
}

// peers: whether other hosts share the store, and the warning of another machine under this host id.
type peers struct {
	many bool
	log  *slog.Logger
	once sync.Once
}

// HostIDEnv names this host where the hostname does not (see hostid.Env).
const HostIDEnv = hostid.Env

// ReadHost reads the host identity as ThisHost does, and refuses a host id
// that is not plain text (hostid.Read).
func ReadHost() (Host, error) {
	id, err := hostid.Read()
	return Host{ID: id, BootID: proc.Boot(), Booted: proc.BootTime(), PIDNS: proc.PIDNamespace()}, err
}

// ThisHost reads the host identity: LOCKLEDGER_HOST_ID, else the hostname.
// It does not check it (see ReadHost).
func ThisHost() Host {
	return Host{ID: hostid.Name(), BootID: proc.Boot(), Booted: proc.BootTime(), PIDNS: proc.PIDNamespace()}
}
