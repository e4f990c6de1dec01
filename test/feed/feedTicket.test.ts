import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  issueTicket,
  MAX_TICKET_CHARS,
  TICKET_LIFETIME_MS,
  TICKET_SKEW_MS,
  verifyTicket,
  type TicketRefusal,
} from '../../src/feed/feedTicket.js';
import { FeedTokens } from '../../src/feed/feedTokens.js';

const KEY = Buffer.alloc(32, 7);
const OTHER_KEY = Buffer.alloc(32, 8);
const NOW = 1_800_000_000_000;
const PATH = '/v1/tenants/acme/events';
const CLAIM = { tenant: 'acme', readerKey: '0123456789abcdef', path: PATH };
const EXPECT = { tenant: 'acme', path: PATH };
const good = issueTicket(KEY, CLAIM, NOW);
const [payload, mac] = good.split('.') as [string, string];

function signed(body: unknown): string {
  const encoded = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8').toString('base64url');
  const digest = createHmac('sha256', KEY).update(`changefeed-feed-ticket-v1.${encoded}`, 'utf8').digest();
  return `${encoded}.${digest.toString('base64url')}`;
}

describe('verifyTicket', () => {
  const refusals: [string, string, { tenant: string; path: string }, number, TicketRefusal][] = [
    ['expired past the skew allowance', good, EXPECT, NOW + TICKET_LIFETIME_MS + TICKET_SKEW_MS + 1, 'expired'],
    ['for another tenant', good, { tenant: 'globex', path: PATH }, NOW, 'other-tenant'],
    ['for another path', good, { tenant: 'acme', path: `${PATH}/stream` }, NOW, 'other-path'],
    ['signed with another key', issueTicket(OTHER_KEY, CLAIM, NOW), EXPECT, NOW, 'bad-signature'],
    [
      'payload tampered',
      `${signed({ t: 'acme', r: 'x', p: PATH, e: NOW })}`.replace(/^./, 'A'),
      EXPECT,
      NOW,
      'bad-signature',
    ],
    [
      'payload swapped, signature kept',
      `${issueTicket(KEY, { ...CLAIM, tenant: 'globex' }, NOW).split('.')[0]}.${mac}`,
      EXPECT,
      NOW,
      'bad-signature',
    ],
    ['signature truncated', `${payload}.${mac.slice(0, 42)}`, EXPECT, NOW, 'malformed'],
    ['signature with padding', `${payload}.${mac}=`, EXPECT, NOW, 'malformed'],
    ['no dot', `${payload}${mac}`, EXPECT, NOW, 'malformed'],
    ['two dots', `${payload}.${mac}.${mac}`, EXPECT, NOW, 'malformed'],
    ['empty', '', EXPECT, NOW, 'malformed'],
    ['only a dot', '.', EXPECT, NOW, 'malformed'],
    ['spaces', `${payload} .${mac}`, EXPECT, NOW, 'malformed'],
    ['standard base64', `${payload}+/.${mac}`, EXPECT, NOW, 'malformed'],
    ['oversized', `${'A'.repeat(MAX_TICKET_CHARS)}.${mac}`, EXPECT, NOW, 'malformed'],
    ['signed, not JSON', signed('not json'), EXPECT, NOW, 'malformed'],
    ['signed JSON null', signed('null'), EXPECT, NOW, 'malformed'],
    ['signed JSON array', signed([1, 2]), EXPECT, NOW, 'malformed'],
    ['signed, expiry a string', signed({ t: 'acme', r: 'k', p: PATH, e: String(NOW) }), EXPECT, NOW, 'malformed'],
    ['signed, expiry a fraction', signed({ t: 'acme', r: 'k', p: PATH, e: NOW + 0.5 }), EXPECT, NOW, 'malformed'],
    ['signed, reader missing', signed({ t: 'acme', p: PATH, e: NOW }), EXPECT, NOW, 'malformed'],
    ['signed, tenant a number', signed({ t: 1, r: 'k', p: PATH, e: NOW }), EXPECT, NOW, 'malformed'],
    [
      'expiring further ahead than a fresh ticket could',
      signed({ t: 'acme', r: 'k', p: PATH, e: NOW + TICKET_LIFETIME_MS + TICKET_SKEW_MS + 1 }),
      EXPECT,
      NOW,
      'too-far-ahead',
    ],
  ];
  it.each(refusals)('refuses a ticket %s', (_name, ticket, expect_, now, reason) => {
    expect(verifyTicket(KEY, ticket, expect_, now)).toEqual({ refused: reason });
  });

  const accepted: [string, number][] = [
    ['just issued', NOW],
    ['at its expiry', NOW + TICKET_LIFETIME_MS],
    ['within the skew allowance past its expiry', NOW + TICKET_LIFETIME_MS + TICKET_SKEW_MS],
    ['on a holder whose clock runs behind by the allowance', NOW - TICKET_SKEW_MS],
  ];
  it.each(accepted)('accepts a valid ticket %s', (_name, now) => {
    expect(verifyTicket(KEY, good, EXPECT, now)).toEqual({
      readerKey: CLAIM.readerKey,
      expiresAtMs: NOW + TICKET_LIFETIME_MS,
    });
  });

  it('reissued for a request a ticket let in, expires with that ticket: never renewed', () => {
    const later = NOW + 45_000;
    const again = issueTicket(KEY, CLAIM, later, NOW + TICKET_LIFETIME_MS);
    expect(verifyTicket(KEY, again, EXPECT, later)).toEqual({
      readerKey: CLAIM.readerKey,
      expiresAtMs: NOW + TICKET_LIFETIME_MS,
    });
    expect(verifyTicket(KEY, again, EXPECT, NOW + TICKET_LIFETIME_MS + TICKET_SKEW_MS + 1)).toEqual({
      refused: 'expired',
    });
  });

  it('carries a digest of the token, never the token', () => {
    const token = 'acme-feed-token-0123456789';
    const reader = new FeedTokens([{ token, reads: { kind: 'tenant', tenant: 'acme' } }]).match(`Bearer ${token}`)!;
    const ticket = issueTicket(KEY, { ...CLAIM, readerKey: reader.key }, NOW);
    expect(Buffer.from(ticket.split('.')[0]!, 'base64url').toString('utf8')).not.toContain(token);
    expect(ticket).not.toContain(Buffer.from(token).toString('base64url').slice(0, 12));
  });
});

describe('FeedTokens.reader: the reader a ticket names, while its token is configured', () => {
  const token = 'acme-feed-token-0123456789';
  const before = new FeedTokens([{ token, reads: { kind: 'tenant', tenant: 'acme' } }]);
  const reader = before.match(`Bearer ${token}`)!;
  it.each([
    ['configured', before, true],
    [
      'revoked (tokens reloaded without it)',
      new FeedTokens([{ token: 'another-token-0123456789', reads: { kind: 'all' } }]),
      false,
    ],
    ['no tokens', new FeedTokens([]), false],
  ] as const)('%s', (_name, tokens, found) => {
    expect(tokens.reader(reader.key)).toEqual(found ? reader : undefined);
  });
  it.each(['', 'x', reader.key.slice(0, 15), `${reader.key}0`, 'g'.repeat(16)])(
    'finds no reader for the key %j',
    (key) => {
      expect(before.reader(key)).toBeUndefined();
    },
  );
});
