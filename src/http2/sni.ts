// Certificate selection for the node:http2 listener from the same entries the Bun.serve TLS
// listener is built from (tls/sni.ts), with the same matching rules: the SNI name compared
// case-insensitively, a `*.foo.com` entry matching one label, the first entry for everything
// else (and for clients that send no SNI, which never reach SNICallback).
//
// Unlike Bun.serve, whose `tls` array is fixed per server (docs/design.md, "Certificate
// rotation"), node:tls asks SNICallback on every handshake, so a rotation is a swap of this
// table: no second listener, no drain. Secure contexts are built on first use and kept while
// their certificate, key and options are unchanged, so a rotation among 10,000 hosts parses only what
// changed, and only when a client asks for it.
import { createSecureContext, type SecureContext } from "node:tls";
import type { TlsEntry } from "../tls/sni.ts";

export interface SniTable {
  /** Context for an SNI name. */
  select(servername: string): SecureContext;
  /** Options of the default (first) entry: the server's own context, for clients without SNI. */
  readonly defaultOptions: { cert: string; key: string; ciphers: string; secureOptions: number; ecdhCurve?: string };
  readonly size: number;
}

interface Cached {
  readonly key: string;
  readonly ctx: SecureContext;
}

export function contextOptions(e: TlsEntry) {
  return { cert: e.cert, key: e.key, ciphers: e.ciphers, secureOptions: e.secureOptions, ...(e.ecdhCurve === undefined ? {} : { ecdhCurve: e.ecdhCurve }) };
}

/**
 * What a context is cached under: the certificate and the options, since hosts sharing a
 * certificate (the default one) can have cipher options of their own (tls/sni.ts HostTls).
 */
const cacheKey = (e: TlsEntry): string => `${e.ciphers}\u0000${e.secureOptions}\u0000${e.ecdhCurve ?? ""}\u0000${e.cert}`;

/**
 * A table for `entries` (entries[0] is the default). `previous` hands over the contexts built
 * so far, keyed by certificate PEM; only those still served are kept.
 */
export function createSniTable(entries: readonly TlsEntry[], previous?: SniTable): SniTable {
  const first = entries[0];
  if (first === undefined) throw new Error("no TLS entries: the default certificate is always the first");
  const byName = new Map<string, TlsEntry>();
  for (const e of entries) if (e.serverName !== undefined) byName.set(e.serverName.toLowerCase(), e);
  const old = previous === undefined ? null : (previous as SniTableImpl).cache;
  const cache = new Map<string, Cached>();
  if (old !== null) {
    for (const e of entries) {
      const k = cacheKey(e);
      const c = old.get(k);
      if (c !== undefined && c.key === e.key) cache.set(k, c);
    }
  }
  return new SniTableImpl(first, byName, cache);
}

class SniTableImpl implements SniTable {
  constructor(
    private readonly first: TlsEntry,
    private readonly byName: ReadonlyMap<string, TlsEntry>,
    readonly cache: Map<string, Cached>,
  ) {}

  get defaultOptions() {
    return contextOptions(this.first);
  }

  get size() {
    return this.byName.size + 1;
  }

  select(servername: string): SecureContext {
    const name = servername.toLowerCase();
    let e = this.byName.get(name);
    if (e === undefined) {
      const dot = name.indexOf(".");
      if (dot > 0) e = this.byName.get(`*${name.slice(dot)}`);
    }
    return this.contextOf(e ?? this.first);
  }

  private contextOf(e: TlsEntry): SecureContext {
    const k = cacheKey(e);
    const hit = this.cache.get(k);
    if (hit !== undefined && hit.key === e.key) return hit.ctx;
    // tls/sni.ts checked every certificate and key (a broken one is already replaced by the
    // default), so this does not throw on Secret contents; if it did, SNICallback fails the
    // handshake of that one name only.
    const ctx = createSecureContext(contextOptions(e));
    this.cache.set(k, { key: e.key, ctx });
    return ctx;
  }
}
