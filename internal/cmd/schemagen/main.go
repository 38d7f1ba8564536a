// Command schemagen writes schema/fields_gen.go from the schema files in
// the current directory (go generate runs it in schema/), package events'
// list of event types, and replay's decoder tables from them and the
// types of packages events and replay.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/lockledger/lockledger/internal/cmd/schemagen/gen"
)

func main() {
	out := flag.String("o", "fields_gen.go", "the file to write")
	decoder := flag.String("decoder", "../replay/decode_gen.go", "the file of replay's decoder tables to write")
	types := flag.String("events", "../events/types_gen.go", "the file of package events' list of event types to write")
	flag.Parse()
	write(*out, func() ([]byte, error) { return gen.Source(os.DirFS(".")) })
	write(*decoder, func() ([]byte, error) { return gen.Decoder(os.DirFS("."), os.DirFS("..")) })
	write(*types, func() ([]byte, error) { return gen.Events(os.DirFS(".")) })
}

func write(name string, source func() ([]byte, error)) {
	src, err := source()
	if err == nil {
		err = os.WriteFile(name, src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}
