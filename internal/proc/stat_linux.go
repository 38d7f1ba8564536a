package proc

import (
	"os"
	"strconv"
)

// ReadStat reads /proc/PID/stat; the zero Stat when it cannot be read.
func ReadStat(pid int) Stat {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}
	}
	return parseStat(string(b))
}
