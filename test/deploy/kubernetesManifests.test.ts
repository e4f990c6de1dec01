import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, PersistentVolumeClaim, Secret, Service } from 'kubernetes-models/v1';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';

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
    if (volume.configMap && !configMaps.has(volume.configMap.name ?? ''))
      problems.push(`volume ${volume.name}: no ConfigMap ${volume.configMap.name}`);
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

      it('runs the daemon non-root on a read-only root, probing /healthz and /readyz on the metrics port', () => {
        const deployment = deployments[0]!;
        const spec = deployment.spec as {
          selector: { matchLabels: Record<string, string> };
          template: { metadata: { labels: Record<string, string> }; spec: IPodSpec };
        };
        expect(spec.template.metadata.labels).toMatchObject(spec.selector.matchLabels);
        const pod = spec.template.spec;
        const daemon = changefeedContainer(pod);
        expect(daemon.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true });
        expect(daemon.ports).toContainEqual({ name: 'metrics', containerPort: IMAGE_HTTP_PORT });
        expect(daemon.livenessProbe?.httpGet?.path).toBe('/healthz');
        expect(daemon.readinessProbe?.httpGet?.path).toBe('/readyz');
        expect(daemon.volumeMounts?.map((m) => m.mountPath)).toEqual(
          expect.arrayContaining(['/config', '/state']) as unknown,
        );
        // More than the daemon's own 20 s shutdown timeout, so SIGTERM drains before the kill.
        expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(20);
        // The Service for scraping selects these pods and finds the named port.
        for (const service of byName(docs, 'Service').values()) {
          const serviceSpec = service.spec as {
            selector: Record<string, string>;
            ports: { targetPort: string }[];
          };
          expect(spec.template.metadata.labels).toMatchObject(serviceSpec.selector);
          for (const port of serviceSpec.ports) expect(daemon.ports?.map((p) => p.name)).toContain(port.targetPort);
        }
      });

      it("gives the daemon a config whose key and secret files are in the Secret's mount", () => {
        const deployment = deployments[0]!;
        const pod = (deployment.spec as { template: { spec: IPodSpec } }).template.spec;
        const daemon = changefeedContainer(pod);
        const configMap = [...byName(docs, 'ConfigMap').values()][0]!;
        const config = parseYaml((configMap.data as Record<string, string>)['changefeed.yaml']!) as {
          api: { apiKeyFile: string };
          sinks: { secretFile?: string }[];
        };
        for (const path of [config.api.apiKeyFile, ...config.sinks.flatMap((s) => s.secretFile ?? [])])
          expect(secretFileExists(docs, pod, daemon, path), path).toBe(true);
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

  it('postgres-replicas.yaml: several replicas, the store URL from the Secret, no claim for /state', () => {
    const docs = load('postgres-replicas.yaml');
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    const spec = deployment.spec as { replicas: number; template: { spec: IPodSpec } };
    expect(spec.replicas).toBeGreaterThan(1);
    const daemon = changefeedContainer(spec.template.spec);
    expect(daemon.env?.find((e) => e.name === 'CHANGEFEED_STORE_URL')?.valueFrom?.secretKeyRef).toBeDefined();
    expect(docs.filter((d) => d.kind === 'PersistentVolumeClaim')).toEqual([]);
  });
});
