import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, PersistentVolumeClaim, Secret, Service } from 'kubernetes-models/v1';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { deepMerge } from '../../src/config/deepMerge.js';
import { directoryMainSchema } from '../../src/config/mainConfig.js';
import { tenantConfigSchema } from '../../src/config/tenantConfigSchema.js';
import { restrictedProfileViolations } from '../support/podSecurityRestricted.js';

/**
 * The manifests under deploy/kubernetes/, checked without a cluster: every object against the
 * Kubernetes JSON schemas (kubernetes-models, offline), then what a schema cannot see: every
 * Secret, ConfigMap, claim, volume, key and port a Deployment refers to exists, probes ask for
 * paths the daemon serves, and the daemon's config in its ConfigMap is one it accepts.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const DIR = join(ROOT, 'deploy', 'kubernetes');
const IMAGE_HTTP_PORT = 9464; // the Dockerfile's CHANGEFEED_HTTP_PORT
const HEALTH_SERVER = readFileSync(join(ROOT, 'src', 'observe', 'healthServer.ts'), 'utf8');

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/Secret': Secret,
  'v1/ConfigMap': ConfigMap,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml'));
const load = (file: string): Manifest[] =>
  parseAllDocuments(readFileSync(join(DIR, file), 'utf8')).map((doc) => {
    expect(doc.errors, `${file}: ${doc.errors.join('; ')}`).toEqual([]);
    return doc.toJS() as Manifest;
  });

/** The objects of `kind` in a file, by name. */
const byName = (docs: Manifest[], kind: string): Map<string, Manifest> =>
  new Map(docs.filter((d) => d.kind === kind).map((d) => [d.metadata.name, d]));

const secretKeys = (secret: Manifest): string[] =>
  Object.keys({ ...(secret.data as object | undefined), ...(secret.stringData as object | undefined) });

/** Every reference of one pod spec that must resolve within the file; problems as text. */
function unresolved(docs: Manifest[], spec: IPodSpec): string[] {
  const problems: string[] = [];
  const secrets = byName(docs, 'Secret');
  const configMaps = byName(docs, 'ConfigMap');
  const claims = byName(docs, 'PersistentVolumeClaim');
  const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
  for (const volume of volumes.values()) {
    if (volume.secret) {
      const secret = secrets.get(volume.secret.secretName ?? '');
      if (!secret) problems.push(`volume ${volume.name}: no Secret ${volume.secret.secretName}`);
      for (const item of volume.secret.items ?? [])
        if (secret && !secretKeys(secret).includes(item.key))
          problems.push(`volume ${volume.name}: no key ${item.key}`);
    }
    if (volume.configMap) {
      const configMap = configMaps.get(volume.configMap.name ?? '');
      if (!configMap) problems.push(`volume ${volume.name}: no ConfigMap ${volume.configMap.name}`);
      for (const item of volume.configMap.items ?? [])
        if (configMap && !Object.hasOwn((configMap.data as object | undefined) ?? {}, item.key))
          problems.push(`volume ${volume.name}: no key ${item.key}`);
    }
    if (volume.persistentVolumeClaim && !claims.has(volume.persistentVolumeClaim.claimName))
      problems.push(`volume ${volume.name}: no PersistentVolumeClaim ${volume.persistentVolumeClaim.claimName}`);
  }
  for (const container of spec.containers) {
    const ports = new Map((container.ports ?? []).map((p) => [p.name ?? String(p.containerPort), p.containerPort]));
    for (const mount of container.volumeMounts ?? [])
      if (!volumes.has(mount.name)) problems.push(`${container.name}: mounts ${mount.name}, not a volume`);
    for (const env of container.env ?? []) {
      const ref = env.valueFrom?.secretKeyRef;
      if (ref && !secretKeys(secrets.get(ref.name ?? '') ?? ({} as Manifest)).includes(ref.key))
        problems.push(`${container.name}: env ${env.name} refers to ${ref.name}/${ref.key}, which does not exist`);
    }
    for (const [kind, probe] of [
      ['startup', container.startupProbe],
      ['liveness', container.livenessProbe],
      ['readiness', container.readinessProbe],
    ] as const) {
      const get = probe?.httpGet;
      if (!get) continue;
      const port = typeof get.port === 'number' ? get.port : ports.get(get.port);
      if (port === undefined)
        problems.push(`${container.name}: ${kind} probe on port ${get.port}, not a container port`);
      if (!HEALTH_SERVER.includes(`path === '${get.path}'`))
        problems.push(`${container.name}: ${kind} probe asks for ${get.path}, which the health server does not serve`);
    }
  }
  return problems;
}

const changefeedContainer = (spec: IPodSpec): IContainer =>
  spec.containers.find((c) => c.image?.includes('skills-changefeed'))!;

/** The file the container sees at `path`, from a Secret volume mounted as a directory. */
function secretFileExists(docs: Manifest[], spec: IPodSpec, container: IContainer, path: string): boolean {
  for (const mount of container.volumeMounts ?? []) {
    const volume = spec.volumes?.find((v) => v.name === mount.name);
    if (!volume?.secret || posix.dirname(path) !== mount.mountPath) continue;
    const secret = byName(docs, 'Secret').get(volume.secret.secretName ?? '');
    const visible = volume.secret.items?.map((i) => i.path) ?? (secret ? secretKeys(secret) : []);
    if (visible.includes(posix.basename(path))) return true;
  }
  return false;
}

/** The ConfigMap volume mounted at `path` in `container`, by the ConfigMap's name. */
function configMapMountedAt(spec: IPodSpec, container: IContainer, path: string): string | undefined {
  const mount = container.volumeMounts?.find((m) => m.mountPath === path);
  return spec.volumes?.find((v) => v.name === mount?.name)?.configMap?.name;
}

/** The daemon's config files: the main file of the ConfigMap at /config, and the tenant files at tenants.dir. */
interface DaemonConfigFiles {
  main: Record<string, unknown> & {
    store?: { url?: string; passwordFile?: string };
    tenants?: { dir?: string };
    feed?: { port?: number; tokenFiles?: string[]; allTenantsTokenFiles?: string[] };
  };
  tenants: Map<string, Record<string, unknown>>;
}

function daemonConfigFiles(docs: Manifest[], spec: IPodSpec, daemon: IContainer): DaemonConfigFiles {
  const configMaps = byName(docs, 'ConfigMap');
  const dataOf = (name: string | undefined): Record<string, string> =>
    (configMaps.get(name ?? '')?.data as Record<string, string> | undefined) ?? {};
  const main = parseYaml(dataOf(configMapMountedAt(spec, daemon, '/config'))['changefeed.yaml'] ?? '') as
    DaemonConfigFiles['main'] | null;
  expect(main, 'no changefeed.yaml in the ConfigMap mounted at /config').toBeTruthy();
  const tenants = new Map<string, Record<string, unknown>>();
  const dir = main!.tenants?.dir;
  if (dir !== undefined)
    for (const [file, text] of Object.entries(dataOf(configMapMountedAt(spec, daemon, dir))))
      tenants.set(file.replace(/\.ya?ml$/, ''), parseYaml(text) as Record<string, unknown>);
  return { main: main!, tenants };
}

/** Every secret file a config names: the key, the sinks' secrets and passwords, the store's password, the feed's tokens. */
function secretFilesOf(config: Record<string, unknown>): string[] {
  const { api, sinks, store, feed } = config as {
    api?: { apiKeyFile?: string };
    sinks?: { secretFile?: string; passwordFile?: string }[];
    store?: { passwordFile?: string };
    feed?: { tokenFiles?: string[]; allTenantsTokenFiles?: string[] };
  };
  return [
    ...(api?.apiKeyFile ? [api.apiKeyFile] : []),
    ...(sinks ?? []).flatMap((s) => [s.secretFile ?? [], s.passwordFile ?? []].flat()),
    ...(store?.passwordFile ? [store.passwordFile] : []),
    ...(feed?.tokenFiles ?? []),
    ...(feed?.allTenantsTokenFiles ?? []),
  ];
}

/** Every YAML file under deploy/, at any depth. */
function yamlFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.ya?ml$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The pod spec of a workload (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob), or none. */
function podTemplateOf(doc: Manifest): { spec: IPodSpec; annotations: Record<string, string> } | undefined {
  type Template = { metadata?: { annotations?: Record<string, string> }; spec?: IPodSpec };
  const spec = doc.spec as
    (IPodSpec & { template?: Template; jobTemplate?: { spec?: { template?: Template } } }) | undefined;
  if (!spec) return undefined;
  if (doc.kind === 'Pod')
    return { spec, annotations: (doc.metadata as { annotations?: Record<string, string> }).annotations ?? {} };
  const template = spec.template ?? spec.jobTemplate?.spec?.template;
  return template?.spec ? { spec: template.spec, annotations: template.metadata?.annotations ?? {} } : undefined;
}

describe('every pod under deploy/', () => {
  const pods = yamlFilesUnder(join(ROOT, 'deploy')).flatMap((file) =>
    parseAllDocuments(readFileSync(file, 'utf8')).flatMap((doc) => {
      const manifest = doc.toJS() as Manifest | null;
      const template = manifest?.kind ? podTemplateOf(manifest) : undefined;
      return template
        ? [{ where: `${relative(ROOT, file)} ${manifest!.kind} ${manifest!.metadata.name}`, ...template }]
        : [];
    }),
  );

  it('is found: the sidecar and the replicas', () => {
    expect(pods.map((p) => p.where).sort()).toEqual([
      'deploy/kubernetes/postgres-replicas.yaml Deployment skills-changefeed',
      'deploy/kubernetes/sidecar.yaml Deployment hr-integration',
    ]);
  });

  for (const pod of pods) {
    describe(pod.where, () => {
      it('passes the Pod Security "restricted" profile', () => {
        expect(restrictedProfileViolations(pod.spec, pod.annotations)).toEqual([]);
      });

      it('mounts no service account token', () => {
        expect(pod.spec.automountServiceAccountToken).toBe(false);
      });
    });
  }
});

describe('the Kubernetes manifests (deploy/kubernetes)', () => {
  it('are the sidecar and the PostgreSQL replicas', () => {
    expect(files.sort()).toEqual(['postgres-replicas.yaml', 'sidecar.yaml']);
  });

  for (const file of files) {
    describe(file, () => {
      const docs = load(file);
      const deployments = docs.filter((d) => d.kind === 'Deployment');

      it('holds only objects the Kubernetes schemas accept', () => {
        for (const doc of docs) {
          const Model = MODELS[`${doc.apiVersion}/${doc.kind}`];
          expect(Model, `${doc.apiVersion} ${doc.kind} has no schema here`).toBeDefined();
          expect(() => new Model!(doc as never).validate(), `${doc.kind} ${doc.metadata.name}`).not.toThrow();
        }
      });

      it('refers only to Secrets, keys, ConfigMaps, claims, volumes, ports and probe paths that exist', () => {
        expect(deployments).toHaveLength(1);
        for (const deployment of deployments) {
          const spec = (deployment.spec as { template: { spec: IPodSpec } }).template.spec;
          expect(unresolved(docs, spec)).toEqual([]);
        }
      });

      it('runs the daemon non-root on a read-only root, probing /healthz (startup, liveness) and /readyz on the metrics port', () => {
        const deployment = deployments[0]!;
        const spec = deployment.spec as {
          selector: { matchLabels: Record<string, string> };
          template: { metadata: { labels: Record<string, string> }; spec: IPodSpec };
        };
        expect(spec.template.metadata.labels).toMatchObject(spec.selector.matchLabels);
        const pod = spec.template.spec;
        const daemon = changefeedContainer(pod);
        expect({ ...pod.securityContext, ...daemon.securityContext }).toMatchObject({
          runAsNonRoot: true,
          readOnlyRootFilesystem: true,
        });
        expect(daemon.ports).toContainEqual({ name: 'metrics', containerPort: IMAGE_HTTP_PORT });
        expect(daemon.startupProbe?.httpGet?.path).toBe('/healthz');
        expect(daemon.livenessProbe?.httpGet?.path).toBe('/healthz');
        expect(daemon.readinessProbe?.httpGet?.path).toBe('/readyz');
        // The startup probe holds liveness back; a delay of its own would only slow the first check.
        expect(daemon.livenessProbe?.initialDelaySeconds).toBeUndefined();
        expect(daemon.volumeMounts?.map((m) => m.mountPath)).toEqual(
          expect.arrayContaining(['/config', '/state']) as unknown,
        );
        // A memory limit, and a request no larger: the kubelet kills beyond it, the scheduler reserves the request.
        const memory = daemon.resources as { requests?: { memory?: string }; limits?: { memory?: string } };
        expect(mebibytes(memory.requests?.memory)).toBeLessThanOrEqual(mebibytes(memory.limits?.memory));
        // More than the daemon's own 20 s shutdown timeout, so SIGTERM drains before the kill.
        expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(20);
        // Each Service selects these pods and finds its named port.
        for (const service of byName(docs, 'Service').values()) {
          const serviceSpec = service.spec as {
            selector: Record<string, string>;
            ports: { targetPort: string }[];
          };
          expect(spec.template.metadata.labels).toMatchObject(serviceSpec.selector);
          for (const port of serviceSpec.ports) expect(daemon.ports?.map((p) => p.name)).toContain(port.targetPort);
        }
      });

      it("gives the daemon configs whose secret files are all in the Secret's mount", () => {
        const pod = (deployments[0]!.spec as { template: { spec: IPodSpec } }).template.spec;
        const daemon = changefeedContainer(pod);
        const { main, tenants } = daemonConfigFiles(docs, pod, daemon);
        const paths = [main, ...tenants.values()].flatMap(secretFilesOf);
        expect(paths.length).toBeGreaterThan(0);
        for (const path of paths) expect(secretFileExists(docs, pod, daemon, path), path).toBe(true);
      });
    });
  }

  it('sidecar.yaml: one daemon per SQLite store (replicas 1, Recreate, /state on the claim) and a config this release accepts', () => {
    const docs = load('sidecar.yaml');
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    const spec = deployment.spec as { replicas: number; strategy: { type: string }; template: { spec: IPodSpec } };
    expect(spec.replicas).toBe(1);
    expect(spec.strategy.type).toBe('Recreate');
    const state = changefeedContainer(spec.template.spec).volumeMounts!.find((m) => m.mountPath === '/state')!;
    expect(spec.template.spec.volumes!.find((v) => v.name === state.name)?.persistentVolumeClaim).toBeDefined();
    const configMap = docs.find((d) => d.kind === 'ConfigMap')!;
    const parsed = appConfigSchema.safeParse(parseYaml((configMap.data as Record<string, string>)['changefeed.yaml']!));
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  describe('postgres-replicas.yaml', () => {
    const docs = load('postgres-replicas.yaml');
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    const spec = deployment.spec as {
      replicas: number;
      selector: { matchLabels: Record<string, string> };
      template: { metadata: { labels: Record<string, string> }; spec: IPodSpec };
    };
    const pod = spec.template.spec;
    const daemon = changefeedContainer(pod);

    it('runs several replicas, with no claim for /state', () => {
      expect(spec.replicas).toBeGreaterThan(1);
      expect(docs.filter((d) => d.kind === 'PersistentVolumeClaim')).toEqual([]);
    });

    it('keeps a voluntary eviction to one replica at a time (a PodDisruptionBudget over these pods)', () => {
      const budgets = docs.filter((d) => d.kind === 'PodDisruptionBudget');
      expect(budgets).toHaveLength(1);
      const budget = budgets[0]!.spec as {
        selector: { matchLabels: Record<string, string> };
        maxUnavailable?: number;
        minAvailable?: number;
      };
      expect(spec.template.metadata.labels).toMatchObject(budget.selector.matchLabels);
      const mayGo = budget.maxUnavailable ?? spec.replicas - (budget.minAvailable ?? spec.replicas);
      expect(mayGo).toBe(1);
    });

    it('spreads the replicas over nodes (required) and zones', () => {
      const constraints = pod.topologySpreadConstraints ?? [];
      const byKey = new Map(constraints.map((c) => [c.topologyKey, c]));
      expect(byKey.get('kubernetes.io/hostname')).toMatchObject({ maxSkew: 1, whenUnsatisfiable: 'DoNotSchedule' });
      expect(byKey.get('topology.kubernetes.io/zone')).toMatchObject({ maxSkew: 1 });
      for (const constraint of constraints)
        expect(spec.template.metadata.labels).toMatchObject(constraint.labelSelector?.matchLabels ?? { none: 'none' });
    });

    it('sets no CPU limit on a lease holder (throttling would pause its renewals), and a memory request and limit', () => {
      const resources = daemon.resources as {
        requests?: Record<string, string>;
        limits?: Record<string, string>;
      };
      expect(resources.limits?.cpu).toBeUndefined();
      expect(resources.requests?.cpu).toBeDefined();
      // The scale bench: VmHWM 440 MiB for 1,000 tenants on one replica (docs/scaling.md).
      expect(mebibytes(resources.limits?.memory)).toBeGreaterThanOrEqual(512);
      expect(mebibytes(resources.requests?.memory)).toBeGreaterThanOrEqual(256);
    });

    it('names the store without a password in the URL and reads it from a Secret file; no secret in the environment', () => {
      const { main } = daemonConfigFiles(docs, pod, daemon);
      expect(main.store?.url).toMatch(/^postgres:\/\//);
      expect(new URL(main.store!.url!).password).toBe('');
      expect(secretFileExists(docs, pod, daemon, main.store!.passwordFile ?? '')).toBe(true);
      expect(daemon.env?.filter((e) => e.valueFrom?.secretKeyRef) ?? []).toEqual([]);
    });

    it('serves several companies: tenants.dir is a ConfigMap of tenant files, each valid over the main file', () => {
      const { main, tenants } = daemonConfigFiles(docs, pod, daemon);
      expect(configMapMountedAt(pod, daemon, main.tenants?.dir ?? '')).toBeDefined();
      expect(tenants.size).toBeGreaterThan(1);
      // The schema the daemon loads the main file with: a feed token there must read every
      // tenant (allTenantsTokenFiles), a tenant's own token is in its file.
      expect(directoryMainSchema.safeParse(main).error?.issues ?? []).toEqual([]);
      const { tenants: _process, store: _store, feed: _feed, ...tenantDefaults } = main;
      for (const [name, file] of tenants) {
        const merged = deepMerge(tenantDefaults, file);
        expect(tenantConfigSchema.safeParse(merged).error?.issues ?? [], name).toEqual([]);
      }
    });

    it('serves the feed on its own port (feed.port, the named port feed) behind a Service', () => {
      const { main } = daemonConfigFiles(docs, pod, daemon);
      expect(main.feed?.port).toBe(9465);
      expect(daemon.ports).toContainEqual({ name: 'feed', containerPort: main.feed!.port });
      const services = [...byName(docs, 'Service').values()].map(
        (s) => (s.spec as { ports: { name: string; targetPort: string }[] }).ports,
      );
      expect(services.flat()).toContainEqual(expect.objectContaining({ name: 'feed', targetPort: 'feed' }));
    });

    it("advertises the pod's own IP for the feed and health ports, so a replica not holding a tenant redirects (no 503)", () => {
      const env = daemon.env ?? [];
      const names = env.map((e) => e.name);
      const podIp = names.indexOf('POD_IP');
      expect(env[podIp]?.valueFrom?.fieldRef?.fieldPath).toBe('status.podIP');
      const { main } = daemonConfigFiles(docs, pod, daemon);
      const feedPort = daemon.ports!.find((p) => p.name === 'feed')!.containerPort;
      const healthPort = daemon.ports!.find((p) => p.name === 'metrics')!.containerPort;
      expect(main.feed?.port).toBe(feedPort);
      for (const [name, port] of [
        ['CHANGEFEED_ADVERTISE_URL', feedPort],
        ['CHANGEFEED_ADVERTISE_HEALTH_URL', healthPort],
      ] as const) {
        // $(POD_IP) expands only after POD_IP is declared.
        expect(names.indexOf(name), name).toBeGreaterThan(podIp);
        expect(env.find((e) => e.name === name)?.value).toBe(`http://$(POD_IP):${port}`);
      }
    });
  });
});

/** A Kubernetes memory quantity (`384Mi`, `1Gi`) in MiB; NaN for anything else. */
function mebibytes(quantity: string | undefined): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity ?? '');
  if (!match) return Number.NaN;
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}
