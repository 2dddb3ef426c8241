// Where endpoints come from: a static list, or the A/AAAA records of the
// upstream's host (a headless Service), asked again every interval.
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';

export interface EndpointAddress {
  host: string;
  port: number;
}

export interface EndpointResolver {
  /** The current endpoints; rejects when discovery fails (the caller keeps the last set). */
  resolve(): Promise<EndpointAddress[]>;
}

export function staticResolver(list: readonly EndpointAddress[]): EndpointResolver {
  return { resolve: async () => [...list] };
}

export function dnsResolver(host: string, port: number, dnsServer: string | undefined): EndpointResolver {
  if (isIP(host)) return staticResolver([{ host, port }]);
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  if (dnsServer) resolver.setServers([dnsServer]);
  return {
    async resolve() {
      // A host with only A or only AAAA records answers NODATA for the other family.
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
      const hosts = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
      if (hosts.length === 0) {
        const err = v4.status === 'rejected' ? (v4.reason as Error) : new Error('no addresses');
        throw new Error(`DNS lookup of ${host} failed: ${(err as Error & { code?: string }).code ?? err.message}`);
      }
      return hosts.sort().map((h) => ({ host: h, port }));
    },
  };
}
