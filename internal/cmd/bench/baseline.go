package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

var baseline = flag.String("baseline", "", "another lockledger binary (an earlier commit's): its CLI rows are measured alternated with -bin's, each on its own root")

// benchBaseline measures the CLI rows of -bin against -baseline, each
// command alternated with the same command of the other binary, so that a
// change is judged against the code before it under the same load.
func benchBaseline(tmp string) {
	old, err := filepath.Abs(*baseline)
	if err != nil {
		die(err)
	}
	if _, err := os.Stat(old); err != nil {
		die(fmt.Errorf("-baseline %s: %w", old, err))
	}
	old = stage(old, filepath.Join(tmp, "bin"), "lockledger-baseline")
	envOf := func(name string) []string {
		return append(cliEnv(filepath.Join(tmp, "baseline-trust")), "LOCKLEDGER_ROOT="+filepath.Join(tmp, "baseline-"+name))
	}
	newEnv, oldEnv := envOf("new"), envOf("old")
	for _, b := range []struct {
		bin string
		env []string
	}{{*bin, newEnv}, {old, oldEnv}} {
		timeCmd(b.env, b.bin, "--log-level", "error", "run", "warm", "--", "true")
	}
	cycle := func(bin string, env []string) time.Duration {
		s := time.Now()
		c := execCommand(env, bin, "--log-level", "error", "acquire", "two-step", "--pid", strconv.Itoa(os.Getpid()))
		out, err := c.Output()
		if err != nil {
			die(fmt.Errorf("%s acquire: %w", bin, err))
		}
		timeCmd(env, bin, "--log-level", "error", "release", "two-step", "--request-id", strings.TrimSpace(string(out)))
		return time.Since(s)
	}
	for _, m := range []struct {
		name string
		run  func(bin string, env []string) time.Duration
	}{
		{"`run NAME -- true`", func(bin string, env []string) time.Duration {
			return timeCmd(env, bin, "--log-level", "error", "run", "bench", "--", "true")
		}},
		{"`acquire` + `release`", cycle},
		{"`status NAME`", func(bin string, env []string) time.Duration {
			return timeCmd(env, bin, "--log-level", "error", "status", "bench")
		}},
		{"`--help`", func(bin string, env []string) time.Duration { return timeCmd(env, bin, "--help") }},
	} {
		var nw, ol []time.Duration
		for i := 0; i < *pairs; i++ {
			nw = append(nw, m.run(*bin, newEnv))
			ol = append(ol, m.run(old, oldEnv))
		}
		r := float64(median(nw)) / float64(median(ol))
		add(row{m.name + ": this build vs -baseline (median of " + strconv.Itoa(*pairs) + " alternated pairs)",
			ms(median(nw)), ms(median(ol)), fmt.Sprintf("%.2fx", r), "<= 1.05x", yes(r <= 1.05)})
	}
}
