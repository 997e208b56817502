package kube

// disposition is what hostlet does with one field of a Kubernetes object.
type disposition int

const (
	// translated: the field becomes part of the pod (a struct's own
	// fields are then looked up one by one).
	translated disposition = iota + 1
	// translatedWhole: the field and everything under it become part of
	// the pod.
	translatedWhole
	// accepted: read, shown, not enforced; the pod carries a note saying
	// so.
	accepted
	// refused: an error naming the field, with why.
	refused
)

// rule is the disposition of one field path pattern (list indexes
// written "[]"), and for accepted and refused fields the words that say
// why.
type rule struct {
	do  disposition
	why string
}

var (
	yes   = rule{do: translated}
	whole = rule{do: translatedWhole}
)

func accept(why string) rule { return rule{do: accepted, why: why} }
func refuse(why string) rule { return rule{do: refused, why: why} }

// Words shared by several rules.
const (
	singleHost   = "not supported on a single host"
	noCluster    = "set by a cluster's API server; ignored here"
	useHostLabel = singleHost + "; use nodeSelector with host labels"
	notYet       = "not supported by hostlet yet"
	noService    = "there are no service accounts on a single host"
)

// metaRules are the rules of an object's metadata (the prefix "metadata."
// left out), for every kind.
var metaRules = map[string]rule{
	"name":                       yes,
	"namespace":                  yes,
	"labels":                     whole,
	"annotations":                whole,
	"generateName":               refuse("a pod's name must be known: set metadata.name"),
	"uid":                        accept(noCluster),
	"resourceVersion":            accept(noCluster),
	"generation":                 accept(noCluster),
	"creationTimestamp":          accept(noCluster),
	"deletionTimestamp":          accept(noCluster),
	"deletionGracePeriodSeconds": accept(noCluster),
	"selfLink":                   accept(noCluster),
	"managedFields":              accept(noCluster),
	"ownerReferences":            accept(noCluster),
	"finalizers":                 accept(noCluster),
}

// podRules are the rules of a pod template: "metadata." and "spec." of a
// Pod, "spec.template." of a workload taken off.
var podRules = map[string]rule{
	"spec.containers":                    yes,
	"spec.initContainers":                yes,
	"spec.ephemeralContainers":           refuse("ephemeral containers are added by kubectl debug to a running pod; not in a manifest"),
	"spec.volumes":                       yes,
	"spec.restartPolicy":                 yes,
	"spec.terminationGracePeriodSeconds": yes,
	"spec.activeDeadlineSeconds":         refuse(notYet),
	"spec.dnsPolicy":                     yes,
	"spec.nodeSelector":                  whole,
	"spec.serviceAccountName":            refuse(noService),
	"spec.serviceAccount":                refuse(noService),
	"spec.automountServiceAccountToken":  yes,
	"spec.nodeName":                      refuse(useHostLabel),
	"spec.hostNetwork":                   yes,
	"spec.hostPID":                       yes,
	"spec.hostIPC":                       yes,
	"spec.shareProcessNamespace":         refuse(notYet),
	"spec.securityContext":               yes,
	"spec.imagePullSecrets":              refuse("registry credentials are the host's (docker login as hostlet's user), not the manifest's"),
	"spec.hostname":                      yes,
	"spec.subdomain":                     refuse("there is no cluster DNS on a single host; set hostname"),
	"spec.affinity":                      refuse(useHostLabel),
	"spec.schedulerName":                 accept("there is no scheduler on a single host: the pod runs where its source puts it"),
	"spec.tolerations":                   refuse(useHostLabel),
	"spec.hostAliases":                   yes,
	"spec.priorityClassName":             refuse(singleHost),
	"spec.priority":                      refuse(singleHost),
	"spec.dnsConfig":                     yes,
	"spec.readinessGates":                refuse(singleHost + "; use a readinessProbe"),
	"spec.runtimeClassName":              refuse(notYet + " (runtimeClassName)"),
	"spec.enableServiceLinks":            accept("there are no Services on a single host: no service environment variables are set"),
	"spec.preemptionPolicy":              refuse(singleHost),
	"spec.overhead":                      refuse(singleHost),
	"spec.topologySpreadConstraints":     refuse(useHostLabel),
	"spec.setHostnameAsFQDN":             refuse("there is no cluster DNS on a single host"),
	"spec.os":                            refuse(notYet + " (os)"),
	"spec.hostUsers":                     refuse(notYet + " (user namespaces)"),
	"spec.schedulingGates":               refuse(useHostLabel),
	"spec.resourceClaims":                refuse(singleHost + " (dynamic resource allocation)"),
	"spec.resources":                     refuse(notYet + " (pod-level resources); set each container's resources.limits"),
	"spec.hostnameOverride":              refuse(notYet + " (hostnameOverride); set hostname"),

	"spec.securityContext.runAsUser":           yes,
	"spec.securityContext.runAsGroup":          yes,
	"spec.securityContext.runAsNonRoot":        yes,
	"spec.securityContext.supplementalGroups":  whole,
	"spec.securityContext.fsGroup":             yes,
	"spec.securityContext.fsGroupChangePolicy": yes,
	"spec.securityContext.sysctls":             whole,
	"spec.securityContext.seccompProfile":      yes,
	"spec.securityContext.seccompProfile.type": yes,

	"spec.hostAliases[].ip":        yes,
	"spec.hostAliases[].hostnames": whole,
	"spec.dnsConfig.nameservers":   whole,
	"spec.dnsConfig.searches":      whole,
	"spec.dnsConfig.options":       refuse(notYet + " (resolver options)"),
}

// initContainerRules are the rules of an init container's fields that
// differ from an app container's (containerRules).
var initContainerRules = map[string]rule{
	"ports":          refuse("an init container runs to completion before the app containers start: it publishes no port"),
	"livenessProbe":  refuse("an init container runs to completion: it has no probes (Kubernetes refuses them too)"),
	"readinessProbe": refuse("an init container runs to completion: it has no probes (Kubernetes refuses them too)"),
	"startupProbe":   refuse("an init container runs to completion: it has no probes (Kubernetes refuses them too)"),
	"lifecycle":      refuse("an init container runs to completion: it has no lifecycle hooks (Kubernetes refuses them too)"),
	"restartPolicy":  refuse(notYet + " (sidecar init containers, restartPolicy Always)"),
}

// containerRules are the rules of a container ("spec.containers[]."
// taken off).
var containerRules = map[string]rule{
	"name":                     yes,
	"image":                    yes,
	"command":                  whole,
	"args":                     whole,
	"workingDir":               yes,
	"ports":                    yes,
	"envFrom":                  yes,
	"env":                      yes,
	"resources":                yes,
	"resizePolicy":             refuse("resizing a running container is a cluster's; change the limits (the container is recreated)"),
	"restartPolicy":            refuse(notYet + " (a container's restartPolicy, sidecars)"),
	"restartPolicyRules":       refuse(notYet + " (restartPolicyRules)"),
	"volumeMounts":             yes,
	"volumeDevices":            refuse(singleHost + " (raw block volumes)"),
	"livenessProbe":            yes,
	"readinessProbe":           yes,
	"startupProbe":             yes,
	"lifecycle":                yes,
	"lifecycle.stopSignal":     yes,
	"lifecycle.postStart":      yes,
	"lifecycle.preStop":        yes,
	"terminationMessagePath":   accept("the termination message is not read: the status shows the exit code and the last log lines"),
	"terminationMessagePolicy": accept("the termination message is not read: the status shows the exit code and the last log lines"),
	"imagePullPolicy":          yes,
	"securityContext":          yes,
	"stdin":                    refuse(notYet + " (stdin)"),
	"stdinOnce":                refuse(notYet + " (stdinOnce)"),
	"tty":                      refuse(notYet + " (tty)"),

	"ports[].name":          yes,
	"ports[].containerPort": yes,
	"ports[].hostPort":      yes,
	"ports[].hostIP":        yes,
	"ports[].protocol":      yes,

	"env[].name":                                     yes,
	"env[].value":                                    yes,
	"env[].valueFrom":                                yes,
	"env[].valueFrom.configMapKeyRef":                yes,
	"env[].valueFrom.configMapKeyRef.name":           yes,
	"env[].valueFrom.configMapKeyRef.key":            yes,
	"env[].valueFrom.configMapKeyRef.optional":       yes,
	"env[].valueFrom.secretKeyRef":                   yes,
	"env[].valueFrom.secretKeyRef.name":              yes,
	"env[].valueFrom.secretKeyRef.key":               yes,
	"env[].valueFrom.secretKeyRef.optional":          yes,
	"env[].valueFrom.fieldRef":                       yes,
	"env[].valueFrom.fieldRef.fieldPath":             yes,
	"env[].valueFrom.fieldRef.apiVersion":            yes,
	"env[].valueFrom.resourceFieldRef":               yes,
	"env[].valueFrom.resourceFieldRef.resource":      yes,
	"env[].valueFrom.resourceFieldRef.divisor":       yes,
	"env[].valueFrom.resourceFieldRef.containerName": yes,
	"env[].valueFrom.fileKeyRef":                     refuse(notYet + " (fileKeyRef)"),
	"envFrom[].prefix":                               yes,
	"envFrom[].configMapRef":                         yes,
	"envFrom[].configMapRef.name":                    yes,
	"envFrom[].configMapRef.optional":                yes,
	"envFrom[].secretRef":                            yes,
	"envFrom[].secretRef.name":                       yes,
	"envFrom[].secretRef.optional":                   yes,

	"resources.limits":   whole,
	"resources.requests": accept("requests are not enforced on a single host (nothing is scheduled): only limits are"),
	"resources.claims":   refuse(singleHost + " (dynamic resource allocation)"),

	"volumeMounts[].name":              yes,
	"volumeMounts[].mountPath":         yes,
	"volumeMounts[].readOnly":          yes,
	"volumeMounts[].subPath":           yes,
	"volumeMounts[].recursiveReadOnly": refuse(notYet + " (recursiveReadOnly)"),
	"volumeMounts[].mountPropagation":  refuse(notYet + " (mountPropagation)"),
	"volumeMounts[].subPathExpr":       refuse(notYet + " (subPathExpr); use subPath"),
	"volumeMounts[].bindMountOptions":  refuse(notYet + " (bindMountOptions)"),

	"securityContext.capabilities":             yes,
	"securityContext.capabilities.add":         whole,
	"securityContext.capabilities.drop":        whole,
	"securityContext.privileged":               yes,
	"securityContext.runAsUser":                yes,
	"securityContext.runAsGroup":               yes,
	"securityContext.runAsNonRoot":             yes,
	"securityContext.readOnlyRootFilesystem":   yes,
	"securityContext.allowPrivilegeEscalation": yes,
	"securityContext.seccompProfile":           yes,
	"securityContext.seccompProfile.type":      yes,
	"securityContext.procMount":                refuse(notYet + " (procMount)"),
}

// probeRules are the rules of a probe ("livenessProbe.",
// "readinessProbe." or "startupProbe." taken off).
var probeRules = map[string]rule{
	"exec":                          yes,
	"exec.command":                  whole,
	"httpGet":                       yes,
	"httpGet.path":                  yes,
	"httpGet.port":                  yes,
	"httpGet.host":                  yes,
	"httpGet.scheme":                yes,
	"httpGet.httpHeaders":           yes,
	"httpGet.httpHeaders[].name":    yes,
	"httpGet.httpHeaders[].value":   yes,
	"tcpSocket":                     yes,
	"tcpSocket.port":                yes,
	"tcpSocket.host":                refuse("a probe checks the pod's own address; leave host out"),
	"grpc":                          yes,
	"grpc.port":                     yes,
	"grpc.service":                  yes,
	"initialDelaySeconds":           yes,
	"timeoutSeconds":                yes,
	"periodSeconds":                 yes,
	"successThreshold":              yes,
	"failureThreshold":              yes,
	"terminationGracePeriodSeconds": refuse(notYet + " (a probe's own grace period); set the pod's terminationGracePeriodSeconds"),
}

// hookRules are the rules of a postStart or preStop hook
// ("lifecycle.postStart." or "lifecycle.preStop." taken off).
var hookRules = map[string]rule{
	"exec":                        yes,
	"exec.command":                whole,
	"httpGet":                     yes,
	"httpGet.path":                yes,
	"httpGet.port":                yes,
	"httpGet.host":                yes,
	"httpGet.scheme":              yes,
	"httpGet.httpHeaders":         yes,
	"httpGet.httpHeaders[].name":  yes,
	"httpGet.httpHeaders[].value": yes,
	"tcpSocket":                   refuse("deprecated in Kubernetes, and not run by hostlet: use exec or httpGet"),
	"sleep":                       yes,
	"sleep.seconds":               yes,
}

// volumeRules are the rules of a pod volume ("spec.volumes[]." taken
// off). A volume source not named here is refused.
var volumeRules = map[string]rule{
	"name":                                    yes,
	"hostPath":                                yes,
	"hostPath.path":                           yes,
	"hostPath.type":                           yes,
	"emptyDir":                                yes,
	"emptyDir.medium":                         yes,
	"emptyDir.sizeLimit":                      yes,
	"persistentVolumeClaim":                   yes,
	"persistentVolumeClaim.claimName":         yes,
	"persistentVolumeClaim.readOnly":          yes,
	"configMap":                               yes,
	"configMap.name":                          yes,
	"configMap.items":                         yes,
	"configMap.defaultMode":                   yes,
	"configMap.optional":                      yes,
	"secret":                                  yes,
	"secret.secretName":                       yes,
	"secret.items":                            yes,
	"secret.defaultMode":                      yes,
	"secret.optional":                         yes,
	"projected":                               yes,
	"projected.defaultMode":                   yes,
	"projected.sources":                       yes,
	"projected.sources[].configMap":           yes,
	"projected.sources[].configMap.name":      yes,
	"projected.sources[].configMap.items":     yes,
	"projected.sources[].configMap.optional":  yes,
	"projected.sources[].secret":              yes,
	"projected.sources[].secret.name":         yes,
	"projected.sources[].secret.items":        yes,
	"projected.sources[].secret.optional":     yes,
	"projected.sources[].downwardAPI":         yes,
	"projected.sources[].downwardAPI.items":   yes,
	"projected.sources[].serviceAccountToken": refuse(noService),
	"downwardAPI":                             yes,
	"downwardAPI.items":                       yes,
	"downwardAPI.defaultMode":                 yes,
}

// keyToPathRules and downwardFileRules are the rules of an item of a
// configMap or secret volume, and of a downwardAPI one.
var (
	keyToPathRules = map[string]rule{
		"key":  yes,
		"path": yes,
		"mode": yes,
	}
	downwardFileRules = map[string]rule{
		"path":                           yes,
		"mode":                           yes,
		"fieldRef":                       yes,
		"fieldRef.fieldPath":             yes,
		"fieldRef.apiVersion":            yes,
		"resourceFieldRef":               yes,
		"resourceFieldRef.resource":      yes,
		"resourceFieldRef.divisor":       yes,
		"resourceFieldRef.containerName": yes,
	}
)

// workloadRules are the rules of a Deployment, DaemonSet and Job's own
// fields (their pod template's are podRules), by kind.
var workloadRules = map[string]map[string]rule{
	"Deployment": {
		"spec.replicas":                  yes,
		"spec.selector":                  yes,
		"spec.selector.matchLabels":      whole,
		"spec.selector.matchExpressions": refuse(notYet + " (matchExpressions); use matchLabels"),
		"spec.template":                  yes,
		"spec.strategy":                  yes,
		"spec.strategy.type":             accept("hostlet replaces each replica in place, as Recreate does, up to sync.concurrency pods at once, each health-gated: a RollingUpdate's availability is not kept"),
		"spec.strategy.rollingUpdate":    accept("each replica is a pod updated in place, health-gated and rolled back on its own: maxSurge and maxUnavailable are not read"),
		"spec.minReadySeconds":           yes,
		"spec.progressDeadlineSeconds":   yes,
		"spec.revisionHistoryLimit":      accept("hostlet keeps the last ready version of each pod, for rollback"),
		"spec.paused":                    refuse("pause a pod's updates with hostlet hold"),
		"status":                         accept(noCluster),
	},
	"DaemonSet": {
		"spec.selector":                  yes,
		"spec.selector.matchLabels":      whole,
		"spec.selector.matchExpressions": refuse(notYet + " (matchExpressions); use matchLabels"),
		"spec.template":                  yes,
		"spec.updateStrategy":            accept("one host runs one pod of a DaemonSet, updated as any pod"),
		"spec.minReadySeconds":           yes,
		"spec.revisionHistoryLimit":      accept("hostlet keeps the last ready version of each pod, for rollback"),
		"status":                         accept(noCluster),
	},
	"Job": {
		"spec.template":                yes,
		"spec.selector":                refuse("a Job's selector is generated; leave it out"),
		"spec.manualSelector":          refuse("a Job's selector is generated; leave it out"),
		"spec.parallelism":             yes,
		"spec.completions":             yes,
		"spec.backoffLimit":            accept("hostlet retries a failed Job pod by its restartPolicy, without a limit"),
		"spec.activeDeadlineSeconds":   refuse(notYet + " (activeDeadlineSeconds)"),
		"spec.ttlSecondsAfterFinished": accept("a finished Job's pod is kept until its manifest is removed"),
		"spec.completionMode":          refuse(notYet + " (completionMode)"),
		"spec.suspend":                 refuse("pause a pod with hostlet hold"),
		"spec.podFailurePolicy":        refuse(notYet + " (podFailurePolicy)"),
		"spec.podReplacementPolicy":    refuse(notYet + " (podReplacementPolicy)"),
		"spec.backoffLimitPerIndex":    refuse(notYet + " (indexed Jobs)"),
		"spec.maxFailedIndexes":        refuse(notYet + " (indexed Jobs)"),
		"spec.successPolicy":           refuse(notYet + " (successPolicy)"),
		"spec.managedBy":               refuse(singleHost),
		"status":                       accept(noCluster),
	},
	"Pod": {
		"status": accept(noCluster),
	},
}

// dataRules are the rules of a ConfigMap, Secret and
// PersistentVolumeClaim's own fields, by kind.
var dataRules = map[string]map[string]rule{
	"ConfigMap": {
		"data":       whole,
		"binaryData": whole,
		"immutable":  accept("a ConfigMap's data is read again at each change of the source, whatever immutable says"),
	},
	"Secret": {
		"data":       whole,
		"stringData": whole,
		"type":       yes,
		"immutable":  accept("a Secret's data is read again at each change of the source, whatever immutable says"),
	},
	"PersistentVolumeClaim": {
		"spec":                           yes,
		"spec.accessModes":               accept("a Docker volume has no access modes: any pod of the host may mount it"),
		"spec.resources":                 accept("a Docker volume has no size: the claim's storage request is not enforced"),
		"spec.storageClassName":          accept("a claim is a named Docker volume of the engine's local driver"),
		"spec.volumeMode":                yes,
		"spec.volumeName":                refuse(singleHost + " (a claim is a named Docker volume, bound to nothing else)"),
		"spec.selector":                  refuse(singleHost + " (a claim is a named Docker volume, bound to nothing else)"),
		"spec.dataSource":                refuse(notYet + " (volume snapshots and clones)"),
		"spec.dataSourceRef":             refuse(notYet + " (volume snapshots and clones)"),
		"spec.volumeAttributesClassName": refuse(singleHost),
		"status":                         accept(noCluster),
	},
}
