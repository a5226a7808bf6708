// The compile step of proxy-ssl-* (annotations/upstream-tls.ts): the Secret it names is read
// into the route option the forwarder hands to fetch (proxy/upstream/forward.ts). What cannot be
// used refuses the Ingress's paths with 503, ingress-nginx's "location denied"
// (proxyssl/main.go returns LocationDenied for a Secret it cannot read or may not read), with a
// diagnostic: never a connection that verifies less than was asked. docs/design.md, "TLS to
// the pods".
import { createPrivateKey, X509Certificate } from "node:crypto";
import { refuseStage } from "../annotations/access-stages.ts";
import { UNRESOLVED, type UpstreamTlsPolicy } from "../annotations/upstream-tls.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { Ingress, Secret } from "../model/schemas.ts";
import type { UpstreamTls } from "../table/types.ts";
import type { ParsedAnnotations } from "./annotations.ts";
import { namespaceOf } from "./order.ts";
import { assembleStages } from "./stages.ts";
import type { SecretRead } from "./access.ts";

export interface ResolvedUpstreamTls {
  readonly annotations: ParsedAnnotations;
  readonly diagnostics: readonly Diagnostic[];
  /** The Secret read (undefined object: absent), or null when proxy-ssl-secret is not used. */
  readonly secret: SecretRead | null;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
/** nginx's $proxy_host: ingress-nginx proxies to `http(s)://upstream_balancer` (nginx.tmpl). */
export const DEFAULT_SSL_NAME = "upstream_balancer";
/** proxy-ssl-protocols' names as TLS protocol versions (RFC 8446 section 4.1.2 legacy_version, supported_versions). */
export const VERSION = { "TLSv1.2": 0x0303, "TLSv1.3": 0x0304 } as const;

function text(secret: Secret, key: string): string | null | undefined {
  const plain = secret.stringData?.[key];
  if (plain !== undefined) return plain;
  const b64 = secret.data?.[key];
  if (b64 === undefined) return undefined;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64.replace(/\s+/g, ""))) return null;
  return Buffer.from(b64, "base64").toString("latin1");
}

/** The certificates of a PEM text, each checked to parse, or why not. */
function certs(pem: string, what: string): string | string[] {
  const blocks = pem.match(PEM_CERT) ?? [];
  if (blocks.length === 0) return `${what} holds no PEM certificate`;
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch {
      return `${what} holds a certificate that does not parse`;
    }
  }
  return blocks;
}

/** The option, or why the Secret cannot be used. */
function read(p: Extract<UpstreamTlsPolicy, { state: "on" }>, key: string, secret: Secret): UpstreamTls | string {
  const crt = text(secret, "tls.crt");
  const pk = text(secret, "tls.key");
  const ca = text(secret, "ca.crt");
  if (crt === null || pk === null || ca === null) return `a value of Secret ${key} is not valid base64`;
  if ((crt === undefined) !== (pk === undefined)) return `Secret ${key} has only one of "tls.crt" and "tls.key"`;
  if (crt === undefined && ca === undefined) return `Secret ${key} has neither "tls.crt"/"tls.key" nor "ca.crt"`;
  // Without ca.crt ingress-nginx writes no proxy_ssl_verify at all (nginx.tmpl), so nothing is
  // verified; Portico refuses instead of serving a route whose author asked for verification.
  if (p.verify && ca === undefined) return `proxy-ssl-verify is on but Secret ${key} has no "ca.crt" to verify with`;
  let cert: string | null = null;
  let k: string | null = null;
  if (crt !== undefined && pk !== undefined) {
    const chain = certs(crt, `"tls.crt" of Secret ${key}`);
    if (typeof chain === "string") return chain;
    try {
      const leaf = new X509Certificate(chain[0] as string);
      if (!leaf.checkPrivateKey(createPrivateKey(pk))) return `"tls.key" of Secret ${key} is not the key of its "tls.crt"`;
    } catch {
      return `"tls.key" of Secret ${key} is not a usable private key`;
    }
    cert = chain.join("\n");
    k = pk;
  }
  let trusted: string | null = null;
  if (ca !== undefined) {
    const list = certs(ca, `"ca.crt" of Secret ${key}`);
    if (typeof list === "string") return list;
    trusted = list.join("\n");
  }
  const name = p.sslName ?? DEFAULT_SSL_NAME;
  return Object.freeze({
    secret: key, cert, key: k, ca: trusted, verify: p.verify, depth: p.depth, checkName: name,
    sni: p.serverName ? name : null, ciphers: p.ciphers,
    minVersion: VERSION[p.protocols[0] ?? "TLSv1.2"], maxVersion: VERSION[p.protocols[p.protocols.length - 1] ?? "TLSv1.2"],
  });
}

/** `ann` with proxy-ssl-* resolved against `secrets`: the route option, or a 503 refusal. */
export function resolveUpstreamTls(ann: ParsedAnnotations, ing: Pick<Ingress, "metadata">, secrets: ReadonlyMap<string, Secret>): ResolvedUpstreamTls {
  const p = ann.policies.upstreamTls;
  if (p.state !== "on") return { annotations: ann, diagnostics: [], secret: null };
  const ns = namespaceOf(ing as Ingress);
  const key = `${p.namespace}/${p.name}`;
  const kept = (ann.options.stages ?? []).filter((s) => (s.params as { reason?: unknown }).reason !== UNRESOLVED);
  const object = p.namespace === ns ? secrets.get(key) : undefined;
  const got =
    p.namespace !== ns
      ? // ingress-nginx refuses another namespace's Secret unless allow-cross-namespace-resources.
        `proxy-ssl-secret ${key} is in another namespace than the Ingress, which is not allowed`
      : object === undefined
        ? `Secret ${key} (proxy-ssl-secret) not found`
        : read(p, key, object);
  const secret: SecretRead | null = p.namespace === ns ? { key, object } : null;
  if (typeof got === "string") {
    const stages = assembleStages([...kept, refuseStage(got, true)]);
    const diagnostics: Diagnostic[] = [
      { kind: "Ingress", namespace: ns, name: ing.metadata.name, reason: object === undefined && p.namespace === ns ? "SecretNotFound" : "InvalidAnnotation", message: `${got}; every path of the Ingress answers 503 until it is fixed`, severity: "error" },
    ];
    return { annotations: Object.freeze({ ...ann, options: Object.freeze({ ...ann.options, stages }) }), diagnostics, secret };
  }
  const stages = kept.length === 0 ? null : assembleStages(kept);
  return { annotations: Object.freeze({ ...ann, options: Object.freeze({ ...ann.options, stages, upstreamTls: got }) }), diagnostics: [], secret };
}
