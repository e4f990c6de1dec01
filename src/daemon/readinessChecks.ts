import type { SinkConnectionState } from '../deliver/sinkWorker.js';
import type { ReadinessCheck } from '../observe/healthServer.js';
import type { PollLoopState } from '../poll/pollLoop.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';

export interface ReadinessInputs {
  now: number;
  store: ChangefeedStore;
  credential: ReadinessCheck;
  pollLoop: PollLoopState;
  /** The service clock's problem, if its Date header is not believed. */
  clockProblem: string | undefined;
  sinks: readonly SinkConnectionState[];
  /** How long a sink may be disconnected (reconnecting) before it makes the daemon unready. */
  sinkGraceMs: number;
}

/** What /readyz reports: store writable, key accepted, polling running, clock believed, every sink connected (and not failing as a whole) or only briefly not. */
export function readinessChecks(r: ReadinessInputs): ReadinessCheck[] {
  const storeProblem = r.store.isOpen ? r.store.health.problem : 'the store is closed';
  const checks: ReadinessCheck[] = [
    storeProblem === undefined ? { name: 'store', ok: true } : { name: 'store', ok: false, detail: storeProblem },
    r.credential,
    r.pollLoop === 'running'
      ? { name: 'polling', ok: true }
      : { name: 'polling', ok: false, detail: `poll loop ${r.pollLoop}` },
    r.clockProblem === undefined ? { name: 'clock', ok: true } : { name: 'clock', ok: false, detail: r.clockProblem },
  ];
  for (const sink of r.sinks) {
    const down = sink.disconnectedSince === null ? 0 : r.now - sink.disconnectedSince;
    const failing = sink.failingSince === null ? 0 : r.now - sink.failingSince;
    const ok = !sink.disabled && down <= r.sinkGraceMs && failing <= r.sinkGraceMs;
    // Failing before not connected: an endpoint that cannot be reached is on the give-up clock too.
    const detail = sink.disabled
      ? `disabled: ${sink.lastError ?? ''}`
      : sink.failingSince !== null
        ? `endpoint failing for ${Math.round(failing / 1000)} s${sink.lastError ? `: ${sink.lastError}` : ''}`
        : sink.disconnectedSince !== null
          ? `not connected for ${Math.round(down / 1000)} s${sink.lastError ? `: ${sink.lastError}` : ''}`
          : undefined;
    checks.push({ name: `sink:${sink.sink}`, ok, ...(detail ? { detail } : {}) });
  }
  return checks;
}
