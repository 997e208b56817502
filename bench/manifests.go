package main

import (
	"fmt"
	"strings"
)

// podFiles are the pods/ folder of a hostlet repo: one manifest per pod of
// the shape, pod i publishing its app containers' ports on ports[i*k :
// (i+1)*k] (k = portsPerPod(shape)), and a hidden keep file so the folder
// exists when there are no pods.
func podFiles(runID, image string, grace int, shape string, ports []int, value string) map[string]string {
	files := map[string]string{"pods/.keep": ""}
	cs := shapeContainers[shape]
	for i := range len(ports) / len(cs) {
		var b strings.Builder
		fmt.Fprintf(&b, `version: v1beta1
id: pod-%d
terminationGracePeriodSeconds: %d
labels:
  %s: %q
containers:
`, i, grace, runLabel, runID)
		for j, c := range cs {
			fmt.Fprintf(&b, "  - name: %s\n    image: %s\n    env:\n", c.name, image)
			for _, kv := range c.env(value) {
				k, v, _ := strings.Cut(kv, "=")
				fmt.Fprintf(&b, "      - {name: %s, value: %q}\n", k, v)
			}
			fmt.Fprintf(&b, "    ports:\n      - {containerPort: %d, hostPort: %d, hostIP: 127.0.0.1}\n", c.port, ports[i*len(cs)+j])
		}
		files[fmt.Sprintf("pods/pod-%d.yaml", i)] = b.String()
	}
	return files
}

// composeFile is the equivalent docker-compose file: one service per pod
// with the same image, environment, port, restart policy, stop grace
// period and run label.
// hostletComposeFiles is composeFile as hostlet reads it from its git
// source: pods/docker-compose.yml, the project named after the run.
func hostletComposeFiles(runID, image string, grace int, ports []int, value string) map[string]string {
	return map[string]string{"pods/docker-compose.yml": "name: hc-" + runID + "\n" + composeFile(runID, image, grace, ports, value)["docker-compose.yml"]}
}

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
