// Package lockcmd holds the commands that take, hold, look at and give up
// locks: acquire, heartbeat, release, steal, run, status, list and init,
// and the hidden helpers run and acquire start (__watch-holder,
// __record-loss). Each command is an options struct and a run function.
package lockcmd
