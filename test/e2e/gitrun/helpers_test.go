package gitrun_test

// The credentials of the smart-HTTP server the tests serve the repository
// from.
const (
	httpUser     = "ops"
	httpPassword = "hunter2-Zq9vX7"
)
