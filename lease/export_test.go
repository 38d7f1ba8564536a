package lease

import "time"

// Deadline exposes a lease's local deadline to the external tests.
func Deadline(s *Lease) time.Time { return s.deadline() }
