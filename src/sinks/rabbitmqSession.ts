import type { ChannelModel, ConfirmChannel, Message } from 'amqplib';
import { settleWithin } from './deadline.js';

/** close() waits this long for close-ok: a vanished broker never sends it. */
const CLOSE_GRACE_MS = 2_000;
const CHANNEL_CLOSED = 'the channel was closed';

/**
 * One connection with its confirm channel, and the state amqplib's events report on them. Replaced
 * as a whole when either is lost: a new connection costs a round trip, and sharing nothing with a
 * dead one leaves no stale callbacks or half-closed channels to reason about.
 */
export class RabbitmqSession {
  /** Aborted with the reason once the connection or channel is gone; in-flight writes listen to it. */
  readonly lost = new AbortController();
  private lostReason = '';
  private blockedReason: string | undefined;
  /** Ids the broker returned as unroutable (mandatory); basic.return precedes the message's ack. */
  readonly returned = new Set<string>();
  channel: ConfirmChannel | undefined;

  constructor(
    readonly model: ChannelModel,
    private readonly explain: (error: unknown) => string,
  ) {
    // An 'error' event without a listener would throw inside amqplib's socket handler and crash
    // the daemon, so these are attached before anything else can happen on the connection.
    model.on('error', (error: Error) => this.lose(explain(error)));
    model.on('close', (error?: Error) => this.lose(error ? explain(error) : 'the connection was closed'));
    model.on('blocked', (reason: string) => (this.blockedReason = reason || 'no reason given'));
    model.on('unblocked', () => (this.blockedReason = undefined));
  }

  /** Set by connection.blocked, cleared by connection.unblocked; a method as it changes during awaits. */
  blocked(): string | undefined {
    return this.blockedReason;
  }

  get reason(): string {
    return this.lostReason;
  }

  lose(reason: string): void {
    // amqplib closes the channels before the connection says why: a specific reason replaces that.
    if (!this.lost.signal.aborted || this.lostReason === CHANNEL_CLOSED) this.lostReason = reason;
    this.lost.abort();
  }

  async openChannel(): Promise<ConfirmChannel> {
    const channel = await this.model.createConfirmChannel();
    channel.on('error', (error: Error) => this.lose(this.explain(error)));
    channel.on('close', () => this.lose(CHANNEL_CLOSED));
    channel.on('return', (message: Message) => this.returned.add(String(message.properties.messageId)));
    this.channel = channel;
    return channel;
  }
}

/** Closes the connection, waiting at most CLOSE_GRACE_MS for the broker's close-ok; never throws. */
export async function closeQuietly(model: ChannelModel): Promise<void> {
  await settleWithin(model.close(), { timeoutMs: CLOSE_GRACE_MS }).catch(() => undefined);
}
