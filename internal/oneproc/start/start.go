// Package start holds the process on one processor (oneproc.Hold) from
// its initialisation, which runs before that of most packages: main.go
// imports it for that alone.
package start

import "github.com/lockledger/lockledger/internal/oneproc"

func init() { oneproc.Hold() }
