package main

import (
	"fmt"
	"os"
	"syscall"
	"text/tabwriter"
	"time"
)

// sample is one timed command: its wall time, the CPU time the kernel
// charged it (user + system, its children included) and the minor page
// faults it took, from its rusage.
type sample struct {
	wall, cpu time.Duration
	faults    int64
}

func (s sample) plus(o sample) sample {
	return sample{s.wall + o.wall, s.cpu + o.cpu, s.faults + o.faults}
}

// usage is what the kernel charged a command that has exited.
func usage(ps *os.ProcessState, wall time.Duration) sample {
	s := sample{wall: wall, cpu: ps.UserTime() + ps.SystemTime()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		s.faults = ru.Minflt
	}
	return s
}

// medianSample is the median of each of the three figures on its own.
func medianSample(ss []sample) sample {
	var w, c []time.Duration
	var f []int64
	for _, s := range ss {
		w, c, f = append(w, s.wall), append(c, s.cpu), append(f, s.faults)
	}
	return sample{median(w), median(c), median(f)}
}

// freshPageCost is what touching one new page of anonymous memory costs
// on this machine (the median of five 16 MiB mappings, each page written
// once): the kernel's fault, zeroing and accounting, and where this is a
// virtual machine, the host's. Start-up work is largely such pages.
func freshPageCost() time.Duration {
	const pages = 4096
	size := pages * os.Getpagesize()
	var per []time.Duration
	for range 5 {
		m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			die(err)
		}
		s := time.Now()
		for i := 0; i < size; i += os.Getpagesize() {
			m[i] = 1
		}
		per = append(per, time.Since(s)/pages)
		if err := syscall.Munmap(m); err != nil {
			die(err)
		}
	}
	return median(per)
}

// costRow is one line of the table of where a CLI row's time goes.
type costRow struct {
	name string
	s    sample
}

var (
	costs     []costRow
	costFloor sample
	pageCost  time.Duration
)

// printCosts writes where each CLI row's time goes beside the floor's:
// CPU time and minor faults, and what is beyond the floor's, with the
// faults at this machine's cost of a fresh page: an upper bound, since
// ru_minflt also counts the cheaper faults on the binary's own pages.
func printCosts() {
	if len(costs) == 0 {
		return
	}
	fmt.Printf("\nWhere the time goes (medians of the same rounds; a fresh page costs %.1f µs here):\n\n", float64(pageCost.Nanoseconds())/1000)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| command\t| wall\t| CPU (user + sys)\t| minor faults\t| wall beyond the floor\t| CPU beyond the floor\t| faults beyond the floor (priced as fresh pages: at most)\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, c := range costs {
		df := c.s.faults - costFloor.faults
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %d\t| %s\t| %s\t| %d (%s)\t|\n", c.name, ms(c.s.wall), ms(c.s.cpu), c.s.faults,
			ms(c.s.wall-costFloor.wall), ms(c.s.cpu-costFloor.cpu), df, ms(time.Duration(df)*pageCost))
	}
	tw.Flush()
}
