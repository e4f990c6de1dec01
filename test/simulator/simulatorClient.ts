import { startSimulator, type Simulator, type SimulatorOptionsInput } from '../../src/simulator/index.js';
import { closeAfterTest } from '../support/closeAfterTest.js';

/** An activity entry as it travels over the wire. */
export interface WireEntry {
  id: string;
  event: string | null;
  performedAt: string | null;
  [field: string]: unknown;
}

/**
 * The union of the fields tests read from list bodies and problem documents; each test asserts
 * which of them are really there.
 */
export interface Body {
  data: WireEntry[];
  pagination: { limit: number; offset: number; total?: number };
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  requestId: string;
  errors: Array<{ field: string; code: string; message: string }>;
  error?: string;
  upgrade_url?: string;
}

export interface Reply<T = Body> {
  status: number;
  headers: Headers;
  text: string;
  /** Whether the body parsed as JSON; when it did not, `json` is undefined despite its type. */
  isJson: boolean;
  json: T;
}

/** GET (or another method) against a running simulator, with its own key unless told otherwise. */
export async function call<T = Body>(
  sim: Simulator,
  pathAndQuery: string,
  opts: { key?: string | null; method?: string; authorization?: string } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = {};
  if (opts.authorization !== undefined) headers.authorization = opts.authorization;
  else if (opts.key !== null) headers.authorization = `Bearer ${opts.key ?? sim.apiKey}`;
  const res = await fetch(`${sim.url}${pathAndQuery}`, { method: opts.method ?? 'GET', headers });
  const text = await res.text();
  try {
    return { status: res.status, headers: res.headers, text, isJson: true, json: JSON.parse(text) as T };
  } catch {
    return { status: res.status, headers: res.headers, text, isJson: false, json: undefined as T };
  }
}

/** Pages through an activity endpoint and returns every entry, in page order. */
export async function readAll(sim: Simulator, path: string, query = ''): Promise<WireEntry[]> {
  const out: WireEntry[] = [];
  for (let offset = 0; ; offset += 200) {
    const sep = path.includes('?') ? '&' : '?';
    const reply = await call(sim, `${path}${sep}limit=200&offset=${offset}${query}`);
    if (reply.status !== 200) throw new Error(`read failed with ${reply.status}: ${reply.text}`);
    out.push(...reply.json.data);
    if (reply.json.data.length < 200) return out;
  }
}

/** Starts a simulator that is closed after the current test. */
export async function useSimulator(options: SimulatorOptionsInput = {}): Promise<Simulator> {
  const sim = await startSimulator(options);
  closeAfterTest(() => sim.close());
  return sim;
}
