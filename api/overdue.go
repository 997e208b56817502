package api

// Overdue is the work of the agent running past its deadline, as its
// watchdog sees it: "" and nil when all is on time.
type Overdue struct {
	// Sync describes a sync pass running past its deadline.
	Sync string
	// Sources describe the sources whose update's checks run past theirs
	// (their status error says so too).
	Sources []string
}

// all lists every overdue piece of work.
func (o Overdue) all() []string {
	var out []string
	if o.Sync != "" {
		out = append(out, o.Sync)
	}
	return append(out, o.Sources...)
}

// overdue asks Options.Overdue, when set.
func (s *Server) overdue() Overdue {
	if s.opts.Overdue == nil {
		return Overdue{}
	}
	return s.opts.Overdue()
}
