// Package eventfmt shows events: the table (coloured where a terminal
// allows), JSON, JSON Lines and CSV forms of history, timeline, export and
// archive, the details of each event type, and the CSV cells a spreadsheet
// cannot run.
package eventfmt
