package store

// NoLedgerError is ErrNoLedger with where it was looked for: a root's
// directory, or a database.
type NoLedgerError struct {
	// Where is the root's path, or the database as describeDB names it.
	Where string
	// Hint says what to check ("check --root or LOCKLEDGER_ROOT").
	Hint string
}

func (e *NoLedgerError) Error() string {
	msg := "no ledger at " + e.Where + "; nothing was ever recorded there"
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrNoLedger) hold.
func (e *NoLedgerError) Is(target error) bool { return target == ErrNoLedger }
