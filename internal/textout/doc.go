// Package textout is the text output of the hostlet CLI: what `hostlet
// status`, `diff`, `validate` and `fleet status` print without -o json,
// and the one rule every text line follows on its way to a terminal.
// Everything shown comes from outside (a host's report, etcd, a source,
// an engine), so each value goes through Text (or Fprintf) on its own
// row, and a command's writer through TerminalSafe: nothing a report
// holds can send a terminal commands or draw rows of its own. JSON
// output needs none of it: its encoder escapes control characters.
//
// Cost: one scan of each value shown, a copy only of a value that holds
// an unsafe rune; the renderers write as they go (tabwriter buffers one
// table).
package textout
