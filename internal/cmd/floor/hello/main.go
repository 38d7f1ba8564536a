// Command hello is the start-up floor: a static Go program that prints one
// line and exits, timed by internal/cmd/bench beside `lockledger --help`.
package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
