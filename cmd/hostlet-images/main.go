// Command hostlet-images is `hostlet images` (internal/imagescmd): hostlet
// runs it with the arguments after "images", so that the registry client
// stays out of the agent's binary and memory. Exit status: 0 nothing due,
// 2 updates due (check) or made (update), 1 errors.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hostlet/hostlet/internal/imagescmd"
	"github.com/hostlet/hostlet/internal/textout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd := imagescmd.NewCommand()
	cmd.SetArgs(os.Args[1:])
	err := cmd.ExecuteContext(ctx)
	stop()
	var ee *imagescmd.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		os.Exit(ee.Code)
	default:
		fmt.Fprintln(os.Stderr, "hostlet images:", textout.Text(err.Error()))
		os.Exit(1)
	}
}
