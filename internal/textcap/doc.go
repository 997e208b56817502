// Package textcap bounds text that comes from outside (manifest files,
// HTTP bodies, etcd values, engine and git errors) before hostlet repeats
// it in an error, the status document, an event or a log line: a quoted
// excerpt of input is one line of at most ExcerptBytes, and every longer
// text is cut at a named bound, saying how many bytes were left out.
//
// Cost: nothing for text within its bound (the string is returned as is);
// one copy of the kept prefix otherwise. The log handler adds one pass over
// a record's attributes.
package textcap
