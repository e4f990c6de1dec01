import { loadOnDemand } from '../loadOnDemand.js';
import { SinkUnavailableError } from '../sinkContract/sinkErrors.js';

/**
 * The one current connection of a sink. A write that finds its connection broken releases that
 * connection, not whatever is current: a write still holding an older connection cannot clear a
 * newer one that a reconnect put in its place.
 */
export class ConnectionSlot<C> {
  private held: C | undefined;

  get current(): C | undefined {
    return this.held;
  }

  hold(connection: C): void {
    this.held = connection;
  }

  /** Empties the slot if `connection` is still the current one; true when it was. */
  release(connection: C): boolean {
    if (this.held !== connection) return false;
    this.held = undefined;
    return true;
  }

  /** Empties the slot and returns what it held, for `close`. */
  take(): C | undefined {
    const held = this.held;
    this.held = undefined;
    return held;
  }
}

/** Whom a broker sink talks to, for messages. Never holds credentials. */
export interface BrokerPeer {
  /** `Redis`, `the MQTT broker`. */
  readonly name: string;
  /** Where, without credentials: `redis://127.0.0.1:6379/0`. */
  readonly address: string;
  /** Matches a reason that says the broker refused the login (bad user name or password); absent without a login. */
  readonly loginRefused?: RegExp;
}

/** The error of a write without a live connection, with why it was lost when known. */
export function notConnected(peer: BrokerPeer, reason?: string): SinkUnavailableError {
  return new SinkUnavailableError(`not connected to ${peer.name} at ${peer.address}${reason ? `: ${reason}` : ''}`);
}

/** The error of a failed connect. A refused login says what to check. */
export function cannotConnect(peer: BrokerPeer, reason: string, cause?: unknown): SinkUnavailableError {
  const hint = peer.loginRefused?.test(reason) ? `; ${peer.name} refused the login: check username and password` : '';
  return new SinkUnavailableError(
    `cannot connect to ${peer.name} at ${peer.address}: ${reason}${hint}`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * A sink's client package (mqtt, ioredis, ...), imported by the sink's first connect: a process
 * whose config names no such sink never loads it. A package that cannot load fails the connect
 * like an unreachable peer, with what to fix.
 */
export function loadClientPackage<T>(name: string, load: () => Promise<T>): Promise<T> {
  return loadOnDemand(
    load,
    (reason, cause) =>
      new SinkUnavailableError(`cannot load the client package ${name} (${reason}); reinstall changefeed`, { cause }),
  );
}
