package ledger

import "testing"

func TestPgSQLRewritesPlaceholdersOutsideQuotesAndComments(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE x = ? AND y = ?`, `SELECT a FROM t WHERE x = $1 AND y = $2`},
		{`SELECT '?', "a?b", ? -- why?` + "\n" + `/* ? */ , ?`, `SELECT '?', "a?b", $1 -- why?` + "\n" + `/* ? */ , $2`},
		{`SELECT max(seq) FROM events INDEXED BY events_at WHERE at <= ?`, `SELECT max(seq) FROM events WHERE at <= $1`},
		{`SELECT a || char(31) || b FROM t`, `SELECT a || chr(31) || b FROM t`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
	} {
		if got := pgSQL(c.in); got != c.want {
			t.Errorf("pgSQL(%q):\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
