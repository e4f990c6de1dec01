import { withExistingStore } from './existingStore.js';
import { parseArgs } from 'node:util';
import { ChangefeedError } from '../errors.js';
import { loadTenantInspectionConfig } from './loadAppConfig.js';

export const DEAD_LETTERS_USAGE = `changefeed dead-letters list [--config FILE] [--tenant NAME] [--sink S] [--json]
changefeed dead-letters retry [--config FILE] [--tenant NAME] [--sink S] (--id EVENT_ID | --all)
  Shows events that exhausted their retries or were rejected for good, with the last status,
  response and error; retry puts them back in line with a fresh attempt budget. Safe while the
  daemon runs; it picks re-queued events up within seconds.`;

export async function deadLettersCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'list' && action !== 'retry')
    throw new ChangefeedError('USAGE', `expected "list" or "retry"\n\n${DEAD_LETTERS_USAGE}`);
  const { values } = parseArgs({
    args: rest,
    options: {
      config: { type: 'string', short: 'c' },
      tenant: { type: 'string' },
      sink: { type: 'string' },
      id: { type: 'string' },
      all: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const { config, tenant } = loadTenantInspectionConfig({ configFlag: values.config, tenant: values.tenant });
  if (values.sink !== undefined && !config.sinks.some((s) => s.name === values.sink)) {
    throw new ChangefeedError(
      'USAGE',
      `no sink named "${values.sink}" in the config (sinks: ${config.sinks.map((s) => s.name).join(', ')})`,
    );
  }
  return withExistingStore(config, { tenant }, async (store) => {
    if (action === 'list') {
      const letters = await store.deadLetters.list({ sink: values.sink, eventId: values.id });
      if (values.json) process.stdout.write(`${JSON.stringify(letters, null, 2)}\n`);
      else if (letters.length === 0) process.stdout.write('no dead letters\n');
      else {
        for (const d of letters) {
          process.stdout.write(
            `${d.sink}  ${d.eventId}  ${d.type}  attempts=${d.attempts}  status=${d.lastStatus ?? '-'} ` +
              ` died=${d.deadAt === null ? '-' : new Date(d.deadAt).toISOString()}\n` +
              `    error: ${d.lastError ?? '-'}\n${d.lastResponse ? `    response: ${d.lastResponse.replace(/\s+/g, ' ').slice(0, 200)}\n` : ''}`,
          );
        }
      }
      return 0;
    }
    if (!values.all && values.id === undefined)
      throw new ChangefeedError('USAGE', 'retry needs --id EVENT_ID or --all');
    const now = Date.now();
    let requeued = 0;
    if (values.id !== undefined) requeued = await store.deadLetters.requeueEvent(values.id, values.sink, now);
    else
      for (const sink of values.sink ? [values.sink] : config.sinks.map((s) => s.name))
        requeued += await store.deadLetters.requeueSink(sink, now);
    process.stdout.write(`re-queued ${requeued} dead letter${requeued === 1 ? '' : 's'}\n`);
    return requeued > 0 || values.all ? 0 : 1;
  });
}
