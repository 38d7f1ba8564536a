package ledger

import (
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/lockledger/lockledger/events"
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

// HostIDEnv names this host where the hostname does not (containers that
// share one, hosts behind one name).
const HostIDEnv = "LOCKLEDGER_HOST_ID"

// ReadHost reads the host identity as ThisHost does, and refuses a host id
// that is not plain text (the rules of an actor: valid UTF-8, no control
// characters, at most 256 bytes): the host id is recorded in every event
// and shown by every report, where such text would forge lines or drive
// the reader's terminal.
func ReadHost() (Host, error) {
	h, field := ThisHost(), HostIDEnv
	if os.Getenv(HostIDEnv) == "" {
		field = "host id (the hostname)"
	}
	return h, checkHostID(field, h.ID)
}

// ThisHost reads the host identity: LOCKLEDGER_HOST_ID, else the hostname,
// else "unknown-host". It does not check it (see ReadHost).
func ThisHost() Host {
	return Host{ID: hostName(), BootID: proc.Boot(), Booted: proc.BootTime(), PIDNS: proc.PIDNamespace()}
}

func hostName() string {
	if name := os.Getenv(HostIDEnv); name != "" {
		return name
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		return name
	}
	return "unknown-host"
}

// checkHostID refuses a host id, named field in the error, that is not
// plain text (see ReadHost); 256 bytes is the longest the event schema
// accepts.
func checkHostID(field, id string) error { return events.ValidText(field, id, 256, false) }
