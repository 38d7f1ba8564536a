package replay_test

import (
	"database/sql"
	"encoding/json"
	"sync"
	"testing"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
)

// probe scripts which pids are alive; start times are unknown, so only
// "gone" makes a holder dead.
type probe struct {
	mu   sync.Mutex
	gone map[int]bool
}

func (p *probe) Probe(pid int) (proc.Liveness, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone[pid] {
		return proc.Gone, ""
	}
	return proc.Alive, ""
}

func (p *probe) set(pid int, gone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone[pid] = gone
}

func openScripted(t *testing.T, root string, c *testclock.Clock, p *probe) *ledger.Ledger {
	t.Helper()
	if p == nil {
		p = &probe{gone: map[int]bool{}}
	}
	return fixture.Open(t, root, ledger.WithClock(c.Now), ledger.WithHost(ledger.Host{ID: "host-a", BootID: "boot-1"}), ledger.WithProcessProbe(p))
}

// tableRow is one row of the locks table with its exclusive holder's row
// of lock_holders, read with plain SQL.
type tableRow struct {
	Name, RequestID, Actor, Intent, IntentVersion, HostID, PIDStart, BootID, CreatedAt, HeartbeatAt, Metadata, Targets string
	Held                                                                                                               bool
	PID                                                                                                                int
	TTL, Token, UpdatedSeq                                                                                             int64
	File                                                                                                               []byte
}

func snapshotTable(t *testing.T, db *sql.DB) map[string]tableRow {
	t.Helper()
	rows, err := db.Query(`SELECT l.lock_name, h.request_id IS NOT NULL, coalesce(h.request_id, l.request_id),
		coalesce(h.actor, ''), coalesce(h.intent, ''), coalesce(h.intent_version, ''), coalesce(h.host_id, l.host_id),
		coalesce(h.pid, 0), coalesce(h.pid_start, ''), coalesce(h.boot_id, ''), coalesce(h.created_at, ''),
		coalesce(h.heartbeat_at, ''), coalesce(h.ttl_seconds, 0), coalesce(h.metadata, ''), l.fencing_token, l.updated_seq,
		l.file, l.targets FROM locks l LEFT JOIN lock_holders h ON h.lock_name = l.lock_name AND h.exclusive = 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]tableRow{}
	for rows.Next() {
		var r tableRow
		if err := rows.Scan(&r.Name, &r.Held, &r.RequestID, &r.Actor, &r.Intent, &r.IntentVersion, &r.HostID, &r.PID,
			&r.PIDStart, &r.BootID, &r.CreatedAt, &r.HeartbeatAt, &r.TTL, &r.Metadata, &r.Token, &r.UpdatedSeq, &r.File, &r.Targets); err != nil {
			t.Fatal(err)
		}
		out[r.Name] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
