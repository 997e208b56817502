package agent_test

import (
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/dockertest"
)

// The pause image tests run against the real engine; hostlet's own
// end-to-end tests are in test/e2e/agent.
func TestMain(m *testing.M) { dockertest.Main(m) }
