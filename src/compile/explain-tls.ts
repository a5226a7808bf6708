// What the HTTPS listener serves for one SNI name, besides the certificate: the TLS 1.2 cipher
// list of the entry the name selects, the protocol versions and the key-exchange groups
// (docs/design.md "Per-host cipher suites", "Explain"). It mirrors tls/sni.ts buildTlsEntries,
// which this pure module may not import: entry 0 is the default (the listener's settings, no
// serverName); a host gets an entry of its own when its own certificate serves it, when it is on
// the default certificate under a served wildcard, or when its Ingress's ssl-ciphers gives it a
// list of its own; the SNI picks the exact entry, then a `*.suffix` one (one label), then
// the default (the Bun.serve and node:http2 SNI tables both do so). Whether a Secret serves is
// the listener's own check (model/pem-check.ts parsePem: the chain parses, the key parses and
// matches the leaf), then its names.
import { namesCover, wildcardOf } from "../model/cert-names.ts";
import { parsePem, type PemParse } from "../model/pem-check.ts";
import type { CertificateBinding, HostTls } from "./types.ts";

/** BoringSSL enables its three TLS 1.3 AEAD suites, whatever the cipher list says (tls/sni.ts). */
export const TLS13_SUITES: readonly string[] = Object.freeze(["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]);

/** The listener settings explain reads (compile fields; ingress-nginx's ConfigMap sets them under --nginx-configmap). */
export interface ListenerTlsSettings {
  readonly tlsCiphers: string;
  readonly tlsMinVersion: "1.2" | "1.3";
  readonly tlsMaxVersion: "1.2" | "1.3";
  readonly tlsEcdhCurve: string;
}

/** explain's `tls`: what the HTTPS listener negotiates for the request's SNI name. */
export interface ExplainListenerTls {
  /** The listener's SNI entry the name selects: its own (exact), a wildcard's, or the default entry. */
  readonly entry: { readonly via: "exact" | "wildcard" | "default"; readonly host: string };
  /**
   * The TLS 1.2 cipher suites offered, in the order that picks one (the server's order:
   * ssl_prefer_server_ciphers on for every host).
   */
  readonly ciphers: readonly string[];
  /**
   * Where that list comes from: the ssl-ciphers annotation of `ingress` (the host's first
   * Ingress that sets it), or the listener's --tls-ciphers (ingress-nginx's ConfigMap ssl-ciphers).
   */
  readonly ciphersFrom: { readonly source: "ssl-ciphers"; readonly ingress: string } | { readonly source: "tls-ciphers" };
  /** The TLS 1.3 suites, when TLS 1.3 is accepted (BoringSSL's fixed three). */
  readonly tls13Ciphers: readonly string[];
  /** The versions accepted: --tls-min-version and --tls-max-version (ConfigMap ssl-protocols). */
  readonly protocols: readonly ("TLSv1.2" | "TLSv1.3")[];
  /** The key-exchange groups offered: --tls-ecdh-curve (ConfigMap ssl-ecdh-curve); null: BoringSSL's default list ("auto"). */
  readonly groups: readonly string[] | null;
  /** Why, in words: a wildcard's list, the settings' names. */
  readonly notes: readonly string[];
}

/**
 * Whether the listener serves `b`'s own certificate for its host, as tls/sni.ts buildTlsEntries
 * decides: no Secret (a spec.tls entry without secretName, or no entry for the host) or no
 * tls.crt/tls.key: the default certificate; a pair the PEM check refuses (a key that does not
 * match the certificate, a certificate that does not parse...): the default, for `reason`; a
 * certificate that does not name the host: the default (ingress-nginx's createServers).
 */
export type OwnCertificate =
  | { readonly served: true }
  | { readonly served: false; readonly why: "no-secret" | "no-pem" | "not-naming" }
  | { readonly served: false; readonly why: "unusable"; readonly reason: string };

/** The check's outcome per binding object (bindings are frozen and kept across compiles). */
const CHECKED = new WeakMap<CertificateBinding, PemParse>();

/** The listener's PEM check of a binding's pair (model/pem-check.ts), once per binding object. */
export function pemOf(b: CertificateBinding): PemParse {
  let p = CHECKED.get(b);
  if (p === undefined) CHECKED.set(b, (p = parsePem(b.cert, b.key)));
  return p;
}

export function ownCertificate(b: CertificateBinding): OwnCertificate {
  if (b.secret === null || b.matchedBy === "none") return { served: false, why: "no-secret" };
  if (b.cert === null || b.key === null) return { served: false, why: "no-pem" };
  const p = pemOf(b);
  if (!p.ok) return { served: false, why: "unusable", reason: p.reason };
  return namesCover(p.sans, b.host.toLowerCase()) ? { served: true } : { served: false, why: "not-naming" };
}

/** The TLS the listener serves for the SNI name `host` (lowercased, as explain normalises it). */
export function listenerTls(
  host: string,
  certificates: readonly CertificateBinding[],
  hostTls: ReadonlyMap<string, HostTls> | undefined,
  s: ListenerTlsSettings,
): ExplainListenerTls {
  const notes: string[] = [];
  const first = new Map<string, CertificateBinding>();
  for (const b of certificates) if (b.host !== "" && !first.has(b.host.toLowerCase())) first.set(b.host.toLowerCase(), b);
  const certServes = (h: string): boolean => {
    const b = first.get(h);
    return b !== undefined && ownCertificate(b).served;
  };
  // The host's own list (buildTlsEntries applies it whole); a pinned host has none.
  const own = (h: string): Extract<HostTls, { readonly ciphers: string }> | undefined => {
    const o = hostTls?.get(h);
    return o === undefined || o.ciphers === null ? undefined : o;
  };
  // A rule host pinned to the listener's list (compile/host-tls.ts) has an entry of its own when
  // the wildcard above it has its own list there.
  const pinned = (h: string): boolean => {
    const w = wildcardOf(h);
    return hostTls?.get(h)?.ciphers === null && w !== null && own(w) !== undefined;
  };
  const hasEntry = (h: string): boolean => {
    if (own(h) !== undefined || certServes(h) || pinned(h)) return true;
    // On the default certificate (a spec.tls host whose Secret does not serve it) under a
    // wildcard whose certificate is served: an entry of its own, so the wildcard does not catch it.
    const w = wildcardOf(h);
    return first.has(h) && w !== null && certServes(w);
  };
  const wild = wildcardOf(host);
  const entry: ExplainListenerTls["entry"] =
    hasEntry(host) ? { via: "exact", host } : wild !== null && hasEntry(wild) ? { via: "wildcard", host: wild } : { via: "default", host: "" };
  const list = entry.via === "default" ? undefined : own(entry.host);
  if (list !== undefined && entry.via === "wildcard") notes.push(`the SNI name has no entry of its own: the entry of ${entry.host} and its ssl-ciphers serve it`);
  const protocols = (["1.2", "1.3"] as const).filter((v) => v >= s.tlsMinVersion && v <= s.tlsMaxVersion).map((v) => `TLSv${v}` as const);
  const groups = s.tlsEcdhCurve === "auto" ? null : s.tlsEcdhCurve.split(":");
  notes.push("versions from --tls-min-version/--tls-max-version (ConfigMap ssl-protocols), groups from --tls-ecdh-curve (ssl-ecdh-curve); the server's order picks the TLS 1.2 suite");
  return {
    entry,
    ciphers: (list?.ciphers ?? s.tlsCiphers).split(":"),
    ciphersFrom: list === undefined ? { source: "tls-ciphers" } : { source: "ssl-ciphers", ingress: list.ingress },
    tls13Ciphers: protocols.includes("TLSv1.3") ? TLS13_SUITES : [],
    protocols,
    groups,
    notes: [...new Set(notes)],
  };
}
