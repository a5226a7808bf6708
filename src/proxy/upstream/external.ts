// ExternalName upstreams. An ExternalName Service (Kubernetes ServiceSpec.externalName) names a
// DNS name chosen by whoever may create Services, so it can point at this pod's own loopback
// and admin port, or at the node's metadata service. With --allow-external-name-services the
// data plane resolves the name itself, drops every address it must never connect to, and hands
// the connect probe, fetch and the WebSocket client the checked address, never the name: a
// second resolution inside fetch could answer differently from the one checked (DNS rebinding:
// a zero TTL flips the answer between check and connect), and two parsers can read one numeric
// name differently (measured on Bun 1.4.5: its c-ares lookup reads "0177.0.0.1" as 177.0.0.1,
// getaddrinfo as 127.0.0.1). The Service's name still goes out as TLS SNI (Backend.serverName)
// and, when the client sent no Host, as Host.
//
// Refused, whatever the name: loopback (127.0.0.0/8, ::1), link-local (169.254.0.0/16, where
// most cloud metadata services answer, and fe80::/10), unspecified / "this network" (0.0.0.0/8,
// ::; Linux connects 0.0.0.0 to the local host), the metadata and credential services outside
// link-local (fd00:ec2::254, 100.100.100.200...: the list and its sources are in
// config/address-policy.ts), the IPv4 ones also in IPv4-mapped (::ffff:0:0/96),
// IPv4-compatible (::/96), IPv4-translated (::ffff:0:0:0/96), NAT64 (64:ff9b::/96 and the
// local-use 64:ff9b:1::/48) and 6to4 (2002::/16) form, and every address of this pod's own
// interfaces (its pod IP reaches the admin port as well as loopback does). Private ranges
// (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) are otherwise allowed: an ExternalName
// that names another in-cluster or VPC service is the ordinary use.
import { lookup as dnsLookup } from "node:dns";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { embeddedIPv4, fixedAddressRefusal, v4Everywhere } from "../../config/address-policy.ts";
import { cidrMatcher, parseCidrList } from "../../config/cidr.ts";
import type { BackendScheme, Upstream } from "../../table/types.ts";
import { AddressForbiddenError, ProxyError } from "../../http/errors.ts";
import type { ProxyHooks } from "../types.ts";

/** Every address a name resolves to, in the resolver's order. Rejects when it resolves to none. */
export type LookupAll = (name: string) => Promise<readonly string[]>;


/** Why an address is refused, or null when it may be connected to. */
export type AddressCheck = (address: string) => string | null;

export interface ExternalOptions {
  /** Default: getaddrinfo through node:dns (hosts file, resolv.conf search list, ndots). */
  readonly lookup?: LookupAll;
  /** Replaces the address check. Tests only: the default check is the policy. */
  readonly check?: AddressCheck;
  readonly now?: () => number;
}

export interface ExternalResolver {
  /**
   * The upstream to connect to for an ExternalName upstream `u` (whose address is a name or an
   * IP literal): same port, address replaced by a checked IP. Throws ProxyError
   * "UpstreamAddressForbidden" when every address is refused, "UpstreamConnect" when the name
   * does not resolve within `timeoutMs`.
   */
  target(u: Upstream, timeoutMs: number): Promise<Upstream>;
  /** Drop the cached answer for a name (a connection to its address failed). */
  forget(name: string): void;
}

/**
 * How long an answer is reused: getaddrinfo gives no TTL, and Bun's own fetch keeps a name for
 * 30 s (its DNS cache), which is what ExternalName upstreams had when fetch resolved them.
 */
const ANSWER_MS = 30_000;
const MAX_NAMES = 1_024;
/** Interfaces rarely change in a pod's life; reading them costs ~45 µs, so not per request. */
const OWN_MS = 5_000;

const systemLookup: LookupAll = (name) =>
  new Promise((resolve, reject) => {
    dnsLookup(name, { all: true }, (err, addrs) => (err ? reject(err) : resolve(addrs.map((a) => a.address))));
  });

/** The refusal rule for one address, given this pod's own addresses (IP literals). */
export function forbiddenReason(address: string, own: ReadonlySet<string>): string | null {
  const fixed = fixedAddressRefusal(address);
  if (fixed !== null) return fixed;
  const mine = ownMatcher(own);
  // The pod's IPv4 address in a 6to4 or local-use NAT64 spelling reaches it too.
  return mine(address) || embeddedIPv4(address).some(({ v4 }) => mine(v4)) ? "this pod's own address" : null;
}

const ownMatchers = new WeakMap<ReadonlySet<string>, (ip: string) => boolean>();

/** This pod's addresses in every spelling; built once per set (ownAddresses is re-read every OWN_MS). */
function ownMatcher(own: ReadonlySet<string>): (ip: string) => boolean {
  let m = ownMatchers.get(own);
  if (m === undefined) {
    const list = parseCidrList([...own].flatMap((a) => (isIP(a) === 4 ? v4Everywhere(`${a}/32`) : isIP(a) === 6 && !a.includes("%") ? [a] : [])));
    m = list.ok ? cidrMatcher(list.list) : () => true; // an own address we cannot read: refuse all
    ownMatchers.set(own, m);
  }
  return m;
}

/** Addresses of this pod's interfaces, as IP literals. */
export function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (isIP(a.address) !== 0) out.add(a.address);
  }
  return out;
}

/** `[v6]:port` or `v4:port`. */
function authorityOf(address: string, port: number): string {
  return address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;
}

/** The name as written, without the brackets an IPv6 literal may carry in --manifests. */
function bare(name: string): string {
  return name.startsWith("[") && name.endsWith("]") ? name.slice(1, -1) : name;
}

interface Answer {
  readonly addresses: readonly string[];
  readonly until: number;
}

export function createExternalResolver(opts: ExternalOptions = {}): ExternalResolver {
  const lookup = opts.lookup ?? systemLookup;
  const now = opts.now ?? (() => performance.now());
  const answers = new Map<string, Answer>();
  const pending = new Map<string, Promise<readonly string[]>>();
  let own: Set<string> | null = null;
  let ownUntil = 0;

  const defaultCheck: AddressCheck = (address) => {
    const t = now();
    if (own === null || t >= ownUntil) {
      own = ownAddresses();
      ownUntil = t + OWN_MS;
    }
    return forbiddenReason(address, own);
  };
  const check = opts.check ?? defaultCheck;

  /** One lookup per name at a time; answers kept ANSWER_MS. */
  function resolve(name: string): Promise<readonly string[]> {
    // An IP literal is its own answer (getaddrinfo would parse it too, but not in brackets).
    const literal = bare(name);
    if (isIP(literal) !== 0) return Promise.resolve([literal]);
    const hit = answers.get(name);
    if (hit !== undefined && hit.until > now()) return Promise.resolve(hit.addresses);
    let p = pending.get(name);
    if (p === undefined) {
      p = lookup(name).then(
        (addresses) => {
          pending.delete(name);
          if (answers.size >= MAX_NAMES) {
            const t = now();
            for (const [k, a] of answers) if (a.until <= t) answers.delete(k);
            if (answers.size >= MAX_NAMES) answers.clear();
          }
          answers.set(name, { addresses, until: now() + ANSWER_MS });
          return addresses;
        },
        (err: unknown) => {
          pending.delete(name);
          throw err;
        },
      );
      pending.set(name, p);
    }
    return p;
  }

  return {
    async target(u, timeoutMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      let addresses: readonly string[];
      try {
        addresses = await Promise.race([
          resolve(u.address),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new ProxyError("UpstreamConnect", `dns: ${u.address}: timeout`)), timeoutMs);
          }),
        ]);
      } catch (e) {
        if (e instanceof ProxyError) throw e;
        const code = (e as { code?: unknown } | null)?.code;
        throw new ProxyError("UpstreamConnect", `dns: ${u.address}: ${typeof code === "string" ? code : String(e)}`);
      } finally {
        clearTimeout(timer);
      }
      // The first permitted address in the resolver's order (getaddrinfo sorts by RFC 6724).
      const refused: { address: string; reason: string }[] = [];
      for (const a of addresses) {
        const why = check(a);
        if (why === null) return { ...u, address: a, authority: authorityOf(a, u.port) };
        refused.push({ address: a, reason: why });
      }
      throw new AddressForbiddenError(u.address, refused);
    },
    forget(name) {
      answers.delete(name);
    },
  };
}

/**
 * Host for a request the client sent without one (HTTP/1.0): the Service's name, as fetch
 * would have written it from a URL naming it, not the IP connected to.
 */
export function hostForName(u: Upstream, scheme: BackendScheme): string {
  const name = u.address.includes(":") && !u.address.startsWith("[") ? `[${u.address}]` : u.address;
  const tls = scheme === "https" || scheme === "grpcs";
  return u.port === (tls ? 443 : 80) ? name : `${name}:${u.port}`;
}

/** ExternalName: the checked address to connect to in place of the name (see above). */
export async function externalTarget(
  input: { readonly headers: Headers; readonly backend: { readonly id: string; readonly scheme: BackendScheme }; readonly connectTimeoutMs: number; readonly hooks?: ProxyHooks | undefined },
  ext: ExternalResolver,
  u: Upstream,
): Promise<Upstream> {
  try {
    const to = await ext.target(u, input.connectTimeoutMs);
    if (!input.headers.has("host")) input.headers.set("host", hostForName(u, input.backend.scheme));
    return to;
  } catch (e) {
    const forbidden = e instanceof ProxyError && e.code === "UpstreamAddressForbidden";
    try {
      input.hooks?.onUpstreamError?.(input.backend.id, forbidden ? "forbidden" : "dns");
    } catch {}
    throw e;
  }
}

let shared: ExternalResolver | null = null;

/** The process-wide resolver (one answer cache for every listener). */
export function sharedExternalResolver(): ExternalResolver {
  return (shared ??= createExternalResolver());
}
