/** Socket errors of a database server that is down, restarting or out of reach. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
/**
 * node-postgres reports a lost or timed-out connection without a code; these are its messages.
 * "timeout exceeded when trying to connect" is its pool's for a checkout that waited behind a full
 * pool: the store's PoolGate never lets one wait there (it queues them itself, STORE_BUSY), so the
 * message is kept only for pools used without the gate (the CLI's migration).
 */
const CONNECTION_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error)/;

/**
 * Whether a statement failed because the connection to the database did (refused, reset, timed
 * out, cut), rather than because the server answered with an error. The database is then
 * unreachable for now: the store reports itself unavailable and the connection is not reused.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return NETWORK_CODES.has(code);
  return CONNECTION_MESSAGE.test(error.message);
}

/**
 * Whether the server refused to open a connection for this role (28000: not permitted to log in,
 * 28P01: wrong password). At open it is a mistake to fix before anything runs (openFailure.ts);
 * once the store runs it is a role or password rotated under a running replica, which pauses
 * polling and delivery like a database that went away, and heals when the role is let in again.
 */
export function isLoginRefused(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && (code === '28000' || code === '28P01');
}

/** An error with which the server ended the session (severity FATAL or PANIC): its connection is gone. */
export function endedSession(error: unknown): boolean {
  const severity = (error as { severity?: unknown } | undefined)?.severity;
  return severity === 'FATAL' || severity === 'PANIC';
}

/**
 * A write refused because the session is read-only (25006): a standby after a failover, or a
 * database or role set to `default_transaction_read_only`, which a session keeps for its life.
 * Given back to the pool, the connection refused every write after the database took writes
 * again, so the store stayed paused until a restart: it is destroyed, and the next connection
 * reaches the new primary or takes the new default.
 */
export function readOnlySession(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === '25006';
}
