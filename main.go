// Command lockledger is a lock manager whose every action is an audit event.
package main

import (
	"os"

	"github.com/lockledger/lockledger/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
