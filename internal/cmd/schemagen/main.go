// Command schemagen writes schema/fields_gen.go from the schema files in
// the current directory (go generate runs it in schema/).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/lockledger/lockledger/internal/cmd/schemagen/gen"
)

func main() {
	out := flag.String("o", "fields_gen.go", "the file to write")
	flag.Parse()
	src, err := gen.Source(os.DirFS("."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}
