import { isIP } from 'node:net';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { readTlsFiles } from '../tlsFiles.js';
import { natsServerUrl, type NatsSinkConfig } from './natsSinkConfig.js';

/**
 * The client's TLS options. nats.js sends no server name for a server given by IP address, and
 * Node then checks the certificate against the name `localhost`: a certificate issued for the
 * address would be refused. Such servers are checked against their addresses instead.
 */
export function natsTlsOptions(config: NatsSinkConfig, servers: readonly string[]): Record<string, unknown> {
  const files = readTlsFiles(config);
  const addresses = servers
    .map((s) => natsServerUrl(s)?.hostname.replace(/^\[(.*)\]$/, '$1') ?? '')
    .filter((host) => isIP(host) !== 0);
  if (addresses.length === 0) return files;
  return {
    ...files,
    checkServerIdentity: (name: string, cert: PeerCertificate): Error | undefined => {
      if (name !== 'localhost') return checkServerIdentity(name, cert);
      if (addresses.some((address) => checkServerIdentity(address, cert) === undefined)) return undefined;
      return checkServerIdentity(addresses.length === 1 ? (addresses[0] as string) : name, cert);
    },
  };
}
