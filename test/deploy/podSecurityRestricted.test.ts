import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { restrictedProfileViolations } from '../support/podSecurityRestricted.js';

/** A pod the restricted profile admits: the pod sets non-root and seccomp, the container the rest. */
const admitted = (): IPodSpec => ({
  securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
  containers: [
    {
      name: 'app',
      image: 'app',
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
    },
  ],
  volumes: [{ name: 'state', emptyDir: {} }],
});

/** `admitted()` changed by `change`, which may mutate it. */
const pod = (change: (spec: IPodSpec & { containers: [IContainer, ...IContainer[]] }) => void): IPodSpec => {
  const spec = admitted() as IPodSpec & { containers: [IContainer, ...IContainer[]] };
  change(spec);
  return spec;
};

const cases: { name: string; spec: IPodSpec; annotations?: Record<string, string>; refused: string[] }[] = [
  { name: 'the reference pod', spec: admitted(), refused: [] },
  {
    name: 'seccomp and non-root set per container instead of on the pod',
    spec: pod((s) => {
      s.securityContext = {};
      s.containers[0].securityContext = {
        ...s.containers[0].securityContext,
        runAsNonRoot: true,
        seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/app.json' },
      };
    }),
    refused: [],
  },
  {
    name: 'no seccomp profile anywhere',
    spec: pod((s) => (s.securityContext = { runAsNonRoot: true })),
    refused: ['container app: seccompProfile.type must be RuntimeDefault or Localhost'],
  },
  {
    name: 'a container Unconfined under a RuntimeDefault pod',
    spec: pod((s) => (s.containers[0].securityContext!.seccompProfile = { type: 'Unconfined' })),
    refused: ['container app: seccompProfile.type must be RuntimeDefault or Localhost'],
  },
  {
    name: 'an Unconfined pod',
    spec: pod((s) => (s.securityContext!.seccompProfile = { type: 'Unconfined' })),
    refused: ['pod: seccompProfile.type Unconfined', 'container app: seccompProfile.type must be'],
  },
  {
    name: 'runAsNonRoot missing',
    spec: pod((s) => delete s.securityContext!.runAsNonRoot),
    refused: ['container app: runAsNonRoot must be true'],
  },
  {
    name: 'a container that sets runAsNonRoot false under a non-root pod',
    spec: pod((s) => (s.containers[0].securityContext!.runAsNonRoot = false)),
    refused: ['container app: runAsNonRoot must be true'],
  },
  {
    name: 'runAsUser 0 on the pod and on a container',
    spec: pod((s) => {
      s.securityContext!.runAsUser = 0;
      s.containers[0].securityContext!.runAsUser = 0;
    }),
    refused: ['pod: runAsUser must not be 0', 'container app: runAsUser must not be 0'],
  },
  {
    name: 'allowPrivilegeEscalation left unset',
    spec: pod((s) => delete s.containers[0].securityContext!.allowPrivilegeEscalation),
    refused: ['container app: allowPrivilegeEscalation must be false'],
  },
  {
    name: 'capabilities not dropped',
    spec: pod((s) => (s.containers[0].securityContext!.capabilities = { drop: ['NET_RAW'] })),
    refused: ['container app: capabilities must drop ALL'],
  },
  {
    name: 'NET_BIND_SERVICE added back',
    spec: pod((s) => (s.containers[0].securityContext!.capabilities = { drop: ['ALL'], add: ['NET_BIND_SERVICE'] })),
    refused: [],
  },
  {
    name: 'another capability added',
    spec: pod((s) => (s.containers[0].securityContext!.capabilities = { drop: ['ALL'], add: ['CHOWN'] })),
    refused: ['container app: capability CHOWN may not be added'],
  },
  {
    name: 'a privileged container',
    spec: pod((s) => (s.containers[0].securityContext!.privileged = true)),
    refused: ['container app: privileged must be unset or false'],
  },
  {
    name: 'host namespaces',
    spec: pod((s) => Object.assign(s, { hostNetwork: true, hostPID: true, hostIPC: true })),
    refused: ['pod: hostNetwork', 'pod: hostPID', 'pod: hostIPC'],
  },
  {
    name: 'a hostPath volume',
    spec: pod((s) => s.volumes!.push({ name: 'docker', hostPath: { path: '/var/run/docker.sock' } })),
    refused: ['volume docker: type hostPath is not allowed'],
  },
  {
    name: 'an nfs volume (baseline would admit it, restricted does not)',
    spec: pod((s) => s.volumes!.push({ name: 'share', nfs: { server: 'nfs', path: '/' } })),
    refused: ['volume share: type nfs is not allowed'],
  },
  {
    name: 'every allowed volume type',
    spec: pod((s) =>
      s.volumes!.push(
        { name: 'a', configMap: { name: 'c' } },
        { name: 'b', secret: { secretName: 's' } },
        { name: 'c', persistentVolumeClaim: { claimName: 'p' } },
        { name: 'd', projected: { sources: [] } },
        { name: 'e', downwardAPI: {} },
        { name: 'f', csi: { driver: 'd' } },
        { name: 'g', ephemeral: {} },
      ),
    ),
    refused: [],
  },
  {
    name: 'a hostPort',
    spec: pod((s) => (s.containers[0].ports = [{ containerPort: 9464, hostPort: 9464 }])),
    refused: ['container app: hostPort 9464 must be unset or 0'],
  },
  {
    name: 'hostPort 0 is no host port',
    spec: pod((s) => (s.containers[0].ports = [{ containerPort: 9464, hostPort: 0 }])),
    refused: [],
  },
  {
    name: 'an unsafe sysctl',
    spec: pod((s) => (s.securityContext!.sysctls = [{ name: 'kernel.msgmax', value: '1' }])),
    refused: ['pod: sysctl kernel.msgmax is not in the safe set'],
  },
  {
    name: 'a safe sysctl',
    spec: pod((s) => (s.securityContext!.sysctls = [{ name: 'net.ipv4.ip_local_port_range', value: '1024 65535' }])),
    refused: [],
  },
  {
    name: 'an unmasked /proc',
    spec: pod((s) => (s.containers[0].securityContext!.procMount = 'Unmasked')),
    refused: ['container app: procMount must be unset or Default'],
  },
  {
    name: 'SELinux: a custom type, user and role',
    spec: pod((s) => (s.securityContext!.seLinuxOptions = { type: 'spc_t', user: 'system_u', role: 'system_r' })),
    refused: ['pod: seLinuxOptions.type spc_t', 'pod: seLinuxOptions.user', 'pod: seLinuxOptions.role'],
  },
  {
    name: 'SELinux: a container type and a level only',
    spec: pod((s) => (s.securityContext!.seLinuxOptions = { type: 'container_t', level: 's0:c1,c2' })),
    refused: [],
  },
  {
    name: 'AppArmor unconfined, by field and by annotation',
    spec: pod((s) => (s.containers[0].securityContext!.appArmorProfile = { type: 'Unconfined' })),
    annotations: { 'container.apparmor.security.beta.kubernetes.io/app': 'unconfined' },
    refused: ['annotation container.apparmor', 'container app: appArmorProfile.type Unconfined'],
  },
  {
    name: 'HostProcess (Windows)',
    spec: pod((s) => (s.containers[0].securityContext!.windowsOptions = { hostProcess: true })),
    refused: ['container app: windowsOptions.hostProcess'],
  },
  {
    name: 'an init container is held to the same rules',
    spec: pod((s) => (s.initContainers = [{ name: 'migrate', image: 'app' }])),
    refused: ['container migrate: allowPrivilegeEscalation', 'container migrate: capabilities must drop ALL'],
  },
];

describe('restrictedProfileViolations (Pod Security Standards, restricted)', () => {
  for (const { name, spec, annotations, refused } of cases)
    it(refused.length === 0 ? `admits ${name}` : `refuses ${name}`, () => {
      const problems = restrictedProfileViolations(spec, annotations);
      expect(problems).toHaveLength(refused.length);
      for (const [index, start] of refused.entries()) expect(problems[index]).toContain(start);
    });
});
