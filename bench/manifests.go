package main

import (
	"fmt"
	"strings"
)

// podFiles are the pods/ folder of a hostlet repo: one manifest per pod,
// pod-<i> on ports[i], and a hidden keep file so the folder exists when
// there are no pods.
func podFiles(runID, image string, grace int, ports []int, value string) map[string]string {
	files := map[string]string{"pods/.keep": ""}
	for i, p := range ports {
		files[fmt.Sprintf("pods/pod-%d.yaml", i)] = fmt.Sprintf(`version: v1beta1
id: pod-%d
terminationGracePeriodSeconds: %d
labels:
  %s: %q
containers:
  - name: app
    image: %s
    env:
      - {name: %s, value: %q}
    ports:
      - {containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}
`, i, grace, runLabel, runID, image, envName, value, p)
	}
	return files
}

// composeFile is the equivalent docker-compose file: one service per pod
// with the same image, environment, port, restart policy, stop grace
// period and run label.
func composeFile(runID, image string, grace int, ports []int, value string) map[string]string {
	var b strings.Builder
	b.WriteString("version: \"2.4\"\n")
	if len(ports) == 0 {
		b.WriteString("services: {}\n")
	} else {
		b.WriteString("services:\n")
	}
	for i, p := range ports {
		fmt.Fprintf(&b, `  pod-%d:
    image: %s
    restart: always
    stop_grace_period: %ds
    labels:
      %s: %q
    environment:
      %s: %q
    ports:
      - "127.0.0.1:%d:8080"
`, i, image, grace, runLabel, runID, envName, value, p)
	}
	return map[string]string{"docker-compose.yml": b.String()}
}
