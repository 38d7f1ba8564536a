package ledger

import "github.com/lockledger/lockledger/store"

// querier reads and execer writes: a *sql.DB, a *sql.Tx or a
// store.PreparedTx.
type (
	querier = store.Querier
	execer  = store.Execer
)
