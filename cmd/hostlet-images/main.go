// Command hostlet-images is `hostlet images` (internal/imagescmd): hostlet
// runs it with the arguments after "images", so that the registry client
// stays out of the agent's binary and memory. Exit status: 0 nothing due,
// 2 updates due (check) or made (update), 1 errors.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hostlet/hostlet/internal/imagescmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := imagescmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
