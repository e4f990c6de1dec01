import pg from 'pg';
import type { BenchRow } from '../benchTable.js';
import { drainThroughput } from '../drainThroughput.js';

const SCHEMA = `cfbench${process.pid}`;
const URL = 'postgres://postgres@127.0.0.1:5432/test';

/** PostgreSQL: one multi-row INSERT per batch, committed (target: 5,000 events/s). */
export async function postgresDelivery(count: number): Promise<BenchRow> {
  try {
    return await drainThroughput(
      'postgres (INSERT ... unnest, 1,000 per transaction)',
      { name: 'postgres', type: 'postgres', url: URL, table: `${SCHEMA}.changefeed_events` },
      count,
    );
  } finally {
    const client = new pg.Client(URL);
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`);
    await client.end();
  }
}
