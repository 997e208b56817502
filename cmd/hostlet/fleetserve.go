package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/fleet"
)

func newFleetServeCommand(g *globalFlags) *cobra.Command {
	var (
		ef     etcdFlags
		listen string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a read-only web page of the fleet from etcd",
		Long: `Serve the fleet view as a web page on --listen: the table of
hostlet fleet status (hosts behind the latest release first), each host
expandable to its pods and recent events; /?selector=k=v filters by
labels, /hosts/NAME shows one host. The page is rendered on the server
(no script, no external asset) and reloads itself every 10 s. It only
reads etcd. It has no authentication: listen on a loopback address or
behind a proxy that has.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			endpoints, prefix, err := ef.resolve(cmd, g)
			if err != nil {
				return err
			}
			cli, _, err := dialFleetEtcd(endpoints)
			if err != nil {
				return err
			}
			defer cli.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", listen, err)
			}
			srv := &http.Server{Handler: fleet.Handler(cli, prefix, time.Now, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))), ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(cmd.OutOrStdout(), "fleet page on http://%s/\n", ln.Addr())
			ctx := cmd.Context()
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := srv.Shutdown(sctx); err != nil {
					return err
				}
				if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
					return err
				}
				return nil
			}
		},
	}
	ef.add(cmd)
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:10270", "address to serve the page on")
	return cmd
}
