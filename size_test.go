package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxFileLines is the size of a file a reader can hold in mind. Packages
// have no size limit: they follow concerns, which docs/architecture.md's
// "Where things live" names for a reviewer to check.
const maxFileLines = 700

// generated is the line, before the package clause, that marks a file as
// generated (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// TestFilesStaySmall fails when a Go file that is not generated is over
// maxFileLines lines (counted as wc -l counts them).
func TestFilesStaySmall(t *testing.T) {
	packages := map[string]int{}
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if isGenerated(b) {
			return nil
		}
		files++
		lines := bytes.Count(b, []byte("\n"))
		if lines > maxFileLines {
			t.Errorf("%s has %d lines, over %d: split it along what it holds", path, lines, maxFileLines)
		}
		if !strings.HasSuffix(path, "_test.go") {
			packages[filepath.Dir(path)] += lines
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || packages["ledger"] == 0 || packages["cli"] == 0 {
		t.Fatalf("read %d Go files in %d packages (ledger %d lines, cli %d): not the repository's root", files, len(packages), packages["ledger"], packages["cli"])
	}
}

// isGenerated reports whether a Go source file says it is generated.
func isGenerated(src []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), len(src)+1)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "package ") {
			return false
		}
		if generated.MatchString(line) {
			return true
		}
	}
	return false
}
