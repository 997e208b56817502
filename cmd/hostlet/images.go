package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/helperexec"
)

// imagesHelper runs `hostlet images` (internal/imagescmd).
const imagesHelper = "hostlet-images"

// newImagesCommand is `hostlet images`: it runs the hostlet-images helper
// beside hostlet with the same arguments, stdio and exit status.
func newImagesCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "images",
		Short:              "Image updates by policy: images check, images update (docs/image-updates.md)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := helperexec.Find(imagesHelper, "")
			if err != nil {
				return fmt.Errorf("images: %w (it is built and shipped beside hostlet)", err)
			}
			c := exec.CommandContext(cmd.Context(), bin, args...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
			err = c.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return &exitError{code: ee.ExitCode(), silent: true}
			}
			return err
		},
	}
}
