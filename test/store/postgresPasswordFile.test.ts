import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresStoreBackend } from '../../src/store/postgres/postgresStoreBackend.js';
import { POSTGRES_PORT } from '../support/postgresAdmin.js';
import { makeTempDir } from '../support/tempDir.js';
import { admin, freshSchema } from './postgresTestDb.js';

/** A password with every character a URL's userinfo must escape. */
const PASSWORD = `p@ss:w/rd%41?#${randomBytes(4).toString('hex')}`;

function passwordFile(content: string): string {
  const file = join(makeTempDir(), 'store-password');
  writeFileSync(file, `${content}\n`);
  return file;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/**
 * A loopback server speaking just enough of the PostgreSQL protocol to ask for a cleartext
 * password (AuthenticationCleartextPassword) and refuse it as a server would (28P01): the
 * password the client sent, as received. This machine's PostgreSQL trusts loopback connections
 * and never asks for one, so only a server that asks can show what the store sends.
 */
async function passwordAskingServer(): Promise<{ port: number; received: Promise<string> }> {
  let deliver: (password: string) => void = () => undefined;
  const received = new Promise<string>((resolve) => (deliver = resolve));
  const server = createServer((socket: Socket) => {
    let buffered = Buffer.alloc(0);
    let started = false;
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length > 65_536) socket.destroy();
      if (!started && buffered.length >= 4 && buffered.length >= buffered.readInt32BE(0)) {
        // The startup message (no type byte): ask for the password in clear text.
        buffered = buffered.subarray(buffered.readInt32BE(0));
        started = true;
        const ask = Buffer.alloc(9);
        ask.write('R', 0);
        ask.writeInt32BE(8, 1);
        ask.writeInt32BE(3, 5);
        socket.write(ask);
      }
      if (started && buffered.length >= 5 && buffered[0] === 'p'.charCodeAt(0)) {
        const length = buffered.readInt32BE(1);
        if (buffered.length < 1 + length) return;
        deliver(buffered.subarray(5, length).toString('utf8').replace(/\0$/, ''));
        const fields = Buffer.from('SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed\0\0', 'utf8');
        const refusal = Buffer.alloc(5);
        refusal.write('E', 0);
        refusal.writeInt32BE(4 + fields.length, 1);
        socket.end(Buffer.concat([refusal, fields]));
      }
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, received };
}

describe('store.passwordFile: the store connects with the password from the file', () => {
  it("sends the file's password, not the URL's (none), to a server that asks for it", async () => {
    const { port, received } = await passwordAskingServer();
    const opening = PostgresStoreBackend.open({
      url: `postgres://changefeed@127.0.0.1:${port}/changefeed`,
      passwordFile: passwordFile(PASSWORD),
      schema: 'changefeed',
      maxConnections: 2,
    });
    const refused = await opening.then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(await received).toBe(PASSWORD);
    expect(refused?.message).toContain('password authentication failed');
    expect(refused?.message).not.toContain(PASSWORD);
    expect(refused?.message).not.toContain(encodeURIComponent(PASSWORD));
  });

  describe.skipIf(!admin)('against the real PostgreSQL', () => {
    const role = `cf_pw_${randomBytes(6).toString('hex')}`;
    afterEach(async () => {
      await admin!.query(`DROP OWNED BY ${role}`).catch(() => undefined);
      await admin!.query(`DROP ROLE IF EXISTS ${role}`);
    });

    it('opens and migrates the store as a password-protected role named in the URL', async () => {
      await admin!.query(`CREATE ROLE ${role} LOGIN PASSWORD '${PASSWORD.replace(/'/g, "''")}'`);
      await admin!.query(`GRANT CREATE ON DATABASE test TO ${role}`);
      const schema = freshSchema();
      const backend = await PostgresStoreBackend.open({
        url: `postgres://${role}@127.0.0.1:${POSTGRES_PORT}/test`,
        passwordFile: passwordFile(PASSWORD),
        schema,
        maxConnections: 2,
      });
      try {
        const store = await backend.tenantStore('t');
        await store.setMeta('written-by', role);
        expect(await store.getMeta('written-by')).toBe(role);
        const { rows } = await admin!.query<{ owner: string }>(
          'SELECT schema_owner AS owner FROM information_schema.schemata WHERE schema_name = $1',
          [schema],
        );
        expect(rows).toEqual([{ owner: role }]);
        // The location shown in messages and `status` holds no password.
        expect(backend.location).toBe(`postgres://<redacted>@127.0.0.1:${POSTGRES_PORT}/test`);
      } finally {
        await backend.close();
      }
    });
  });
});
