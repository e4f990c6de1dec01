import type { IContainer, IPodSpec, ISecurityContext } from 'kubernetes-models/v1';

/**
 * The checks of the Kubernetes Pod Security Standards, "restricted" profile (which includes
 * "baseline"), as https://kubernetes.io/docs/concepts/security/pod-security-standards/ lists
 * them for Linux pods, over one pod spec and its annotations. What a namespace labelled
 * `pod-security.kubernetes.io/enforce: restricted` would refuse, as text, one line per breach;
 * an empty list means the pod is admitted. Kept offline so the manifests are checked without a
 * cluster; the table in podSecurityRestricted.test.ts pins each rule.
 */
export function restrictedProfileViolations(spec: IPodSpec, annotations: Record<string, string> = {}): string[] {
  const problems: string[] = [];
  const pod = spec.securityContext ?? {};
  const containers: IContainer[] = [
    ...spec.containers,
    ...(spec.initContainers ?? []),
    ...((spec.ephemeralContainers ?? []) as IContainer[]),
  ];

  // Baseline: host namespaces, HostProcess, hostPath, hostPort, privileged, sysctls, /proc, SELinux, AppArmor.
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const)
    if (spec[field] === true) problems.push(`pod: ${field} must be unset or false`);
  if (pod.windowsOptions?.hostProcess === true) problems.push('pod: windowsOptions.hostProcess must be unset or false');
  for (const volume of spec.volumes ?? []) {
    const types = Object.keys(volume).filter((key) => key !== 'name');
    for (const type of types)
      if (!ALLOWED_VOLUME_TYPES.has(type))
        problems.push(
          `volume ${volume.name}: type ${type} is not allowed (only ${[...ALLOWED_VOLUME_TYPES].join(', ')})`,
        );
  }
  for (const sysctl of pod.sysctls ?? [])
    if (!SAFE_SYSCTLS.has(sysctl.name)) problems.push(`pod: sysctl ${sysctl.name} is not in the safe set`);
  problems.push(...seLinuxProblems('pod', pod.seLinuxOptions));
  problems.push(...appArmorProblems('pod', pod.appArmorProfile?.type));
  for (const [key, value] of Object.entries(annotations))
    if (key.startsWith(APPARMOR_ANNOTATION) && !isAllowedAppArmorAnnotation(value))
      problems.push(`annotation ${key}: ${value} is not runtime/default or localhost/*`);

  // Restricted, pod level: what a container inherits unless it says otherwise.
  const podSeccomp = pod.seccompProfile?.type;
  if (podSeccomp !== undefined && !RESTRICTED_SECCOMP.has(podSeccomp))
    problems.push(`pod: seccompProfile.type ${podSeccomp} must be RuntimeDefault or Localhost`);
  if (pod.runAsUser === 0) problems.push('pod: runAsUser must not be 0');

  for (const container of containers) {
    const where = `container ${container.name}`;
    const context: ISecurityContext = container.securityContext ?? {};
    if (context.privileged === true) problems.push(`${where}: privileged must be unset or false`);
    if (context.windowsOptions?.hostProcess === true)
      problems.push(`${where}: windowsOptions.hostProcess must be unset or false`);
    for (const port of container.ports ?? [])
      if (port.hostPort !== undefined && port.hostPort !== 0)
        problems.push(`${where}: hostPort ${port.hostPort} must be unset or 0`);
    if (context.procMount !== undefined && context.procMount !== 'Default')
      problems.push(`${where}: procMount must be unset or Default`);
    problems.push(...seLinuxProblems(where, context.seLinuxOptions));
    problems.push(...appArmorProblems(where, context.appArmorProfile?.type));

    if (context.allowPrivilegeEscalation !== false) problems.push(`${where}: allowPrivilegeEscalation must be false`);
    // The container's own setting wins over the pod's: true in either, and false in neither.
    const nonRoot = context.runAsNonRoot ?? pod.runAsNonRoot;
    if (nonRoot !== true) problems.push(`${where}: runAsNonRoot must be true (here or in the pod's securityContext)`);
    if (context.runAsUser === 0) problems.push(`${where}: runAsUser must not be 0`);
    const seccomp = context.seccompProfile?.type ?? podSeccomp;
    if (seccomp === undefined || !RESTRICTED_SECCOMP.has(seccomp))
      problems.push(
        `${where}: seccompProfile.type must be RuntimeDefault or Localhost (here or in the pod's securityContext), ` +
          `not ${seccomp ?? 'unset'}`,
      );
    const capabilities = context.capabilities ?? {};
    if (!(capabilities.drop ?? []).includes('ALL')) problems.push(`${where}: capabilities must drop ALL`);
    for (const added of capabilities.add ?? [])
      if (added !== 'NET_BIND_SERVICE') problems.push(`${where}: capability ${added} may not be added`);
  }
  return problems;
}

/** The volume types the restricted profile admits; any other (hostPath, nfs, ...) is refused. */
const ALLOWED_VOLUME_TYPES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

const RESTRICTED_SECCOMP = new Set(['RuntimeDefault', 'Localhost']);

/** The sysctls baseline admits (the namespaced "safe" set, up to Kubernetes 1.32). */
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);

const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);

function seLinuxProblems(
  where: string,
  options: { type?: string; user?: string; role?: string } | undefined,
): string[] {
  if (!options) return [];
  const problems: string[] = [];
  if (options.type !== undefined && !SELINUX_TYPES.has(options.type))
    problems.push(`${where}: seLinuxOptions.type ${options.type} is not a container type`);
  if (options.user) problems.push(`${where}: seLinuxOptions.user must be unset`);
  if (options.role) problems.push(`${where}: seLinuxOptions.role must be unset`);
  return problems;
}

function appArmorProblems(where: string, type: string | undefined): string[] {
  return type === undefined || type === 'RuntimeDefault' || type === 'Localhost'
    ? []
    : [`${where}: appArmorProfile.type ${type} must be RuntimeDefault or Localhost`];
}

const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';

function isAllowedAppArmorAnnotation(value: string): boolean {
  return value === 'runtime/default' || value.startsWith('localhost/');
}
