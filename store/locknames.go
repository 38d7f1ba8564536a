package store

import "context"

// LockNames are the names of the locks the log has any event of, those
// starting with prefix, sorted, at most limit: every lock that ever
// existed, held or not (shell completion of the commands that read the
// past).
func LockNames(ctx context.Context, q Querier, prefix string, limit int) ([]string, error) {
	return QueryAll(ctx, q, ScanOne[string], `SELECT DISTINCT lock_name FROM events
		WHERE lock_name <> '' AND substr(lock_name, 1, $1) = $2 ORDER BY lock_name LIMIT $3`, len(prefix), prefix, limit)
}
