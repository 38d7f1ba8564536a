package ledger

import "time"

// LeaseDeadline exposes a lease's local deadline to the external tests.
func LeaseDeadline(s *Lease) time.Time { return s.deadline() }
