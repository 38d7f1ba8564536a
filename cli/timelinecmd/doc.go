// Package timelinecmd holds the commands that read what happened: history,
// timeline (with its page and pictures), who and replay. Each command is
// an options struct and a run function.
package timelinecmd
