// TLS to HTTPS pods (ingress-nginx's proxy-ssl-secret, proxy-ssl-verify, proxy-ssl-verify-depth,
// proxy-ssl-name, proxy-ssl-server-name, proxy-ssl-ciphers, proxy-ssl-protocols:
// internal/ingress/annotations/proxyssl/main.go and the location block of
// rootfs/etc/nginx/template/nginx.tmpl). This family reads the annotations; the compiler reads
// the Secret (compile/upstream-tls.ts) and the forwarder hands the result to fetch's `tls`
// option (proxy/upstream/forward.ts). docs/design.md, "TLS to the pods".
import * as v from "valibot";
import { refuseStage, REFUSED_STATUS } from "./access-stages.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { PROXY_SSL_SECRET_NAMES } from "../model/secret-refs.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { VerifyDepth } from "./values.ts";
import { parseCipherList } from "../config/cipher-list.ts";

export type UpstreamTlsPolicy =
  | { readonly state: "none" }
  /** proxy-ssl-secret cannot be used as written: ingress-nginx denies the location (503). */
  | { readonly state: "invalid"; readonly reason: string }
  | {
      readonly state: "on";
      readonly namespace: string;
      readonly name: string;
      readonly verify: boolean;
      readonly depth: number;
      /** proxy-ssl-name; null: nginx's default, `$proxy_host`, which is `upstream_balancer` in ingress-nginx. */
      readonly sslName: string | null;
      readonly serverName: boolean;
      /** The TLS 1.2 suites proxy-ssl-ciphers selects, names separated by colons (DEFAULT_PROXY_SSL_CIPHERS when unset or invalid). */
      readonly ciphers: string;
      /** Sorted, as ingress-nginx's sortProtocols leaves them. */
      readonly protocols: readonly ("TLSv1.2" | "TLSv1.3")[];
    };

/** One proxy-ssl-* annotation under its Portico and ingress-nginx names. */
const spec = (n: string, dflt: string, description: string, compat: AnnotationSpec["compat"]): AnnotationSpec => ({
  portico: `portico.dev/${n}`,
  nginx: [`${NGINX_PREFIX}${n}`],
  family: "upstream-tls",
  default: dflt,
  description,
  compat,
});

/** ingress-nginx's proxySSLOnOffRegex: anything else reads as the default (off). */
const OnOff = v.pipe(v.string(), v.trim(), v.picklist(["on", "off"], "expected on or off"), v.transform((s) => s === "on"));
/**
 * ingress-nginx's proxySSLCiphersRegex (OpenSSL cipher list characters only), then the string
 * as OpenSSL 3 reads it (config/cipher-list.ts), to the suites it selects: the policy carries
 * them, so compile/upstream-tls.ts puts them on the route as they are. A string nginx would
 * refuse, or that leaves no suite Portico serves, reads as invalid, so the default applies.
 */
const Ciphers = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^[A-Za-z0-9+:_\-!]+$/, "expected an OpenSSL cipher list"),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const out = parseCipherList(dataset.value);
    if ("message" in out) {
      addIssue({ message: out.message });
      return NEVER;
    }
    return out.value;
  }),
);
/** nginx's proxy_ssl_ciphers default, DEFAULT, evaluated once as OpenSSL 3 reads it (config/cipher-list.ts). */
export const DEFAULT_PROXY_SSL_CIPHERS: string = (() => {
  const out = parseCipherList("DEFAULT");
  // DEFAULT selects every suite Portico serves (config/cipher-list.test.ts): a failure here is a
  // broken build, caught at start-up and by every test that loads the module.
  if ("message" in out) throw new Error(`cipher string DEFAULT: ${out.message}`);
  return out.value;
})();
/** ingress-nginx's proxySSLProtocolRegex, then sortProtocols (empty list: TLSv1.2). */
const Protocols = v.pipe(
  v.string(),
  v.regex(/^(TLSv1\.2|TLSv1\.3| )*$/, "expected TLSv1.2 and/or TLSv1.3"),
  v.transform((s) => {
    const list = [...new Set(s.split(" ").filter((p) => p !== ""))].sort() as ("TLSv1.2" | "TLSv1.3")[];
    return list.length === 0 ? (["TLSv1.2"] as const) : list;
  }),
);
/** A DNS name (the name checked in the pod's certificate and sent as SNI). */
const SslName = v.pipe(v.string(), v.trim(), v.regex(/^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/, "expected a DNS name"));
/** proxysslmain.go: k8s.ParseNameNS, `namespace/name` only. */
const SecretNsName = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, "expected namespace/name"),
  v.transform((s) => ({ namespace: s.slice(0, s.indexOf("/")), name: s.slice(s.indexOf("/") + 1) })),
);

const DENIED = `every path of the Ingress answers ${REFUSED_STATUS} until it is fixed (ingress-nginx denies the location)`;

export const PROXY_SSL_SECRET: AnnotationSpec = {
  ...PROXY_SSL_SECRET_NAMES,
  family: "upstream-tls",
  default: "none",
  description:
    "`namespace/name` of a Secret (the Ingress's namespace) whose `tls.crt`/`tls.key` are presented to HTTPS and GRPCS pods and whose `ca.crt` verifies them when `proxy-ssl-verify` is on; watched",
  compat: {
    kind: "differs",
    difference: `A Secret that is missing, in another namespace, or without a usable \`tls.crt\`, \`tls.key\` and \`ca.crt\` answers ${REFUSED_STATUS} on every path, as ingress-nginx's "location denied". As in ingress-nginx, the host's first Ingress (oldest first) whose Secret holds \`ca.crt\` also covers the host's paths of Ingresses without \`proxy-ssl-*\` (its server block), unless \`--proxy-ssl-location-only\` (the ConfigMap key).`,
  },
};
export const PROXY_SSL_VERIFY: AnnotationSpec = spec(
  "proxy-ssl-verify",
  "off",
  "`on`: the pod's certificate must chain to the Secret's `ca.crt` and carry `proxy-ssl-name` (502 otherwise)",
  { kind: "same" },
);
export const PROXY_SSL_VERIFY_DEPTH: AnnotationSpec = spec(
  "proxy-ssl-verify-depth",
  "1",
  "certificates allowed between the pod's and the trust anchor (OpenSSL's verify depth; 1: the pod's issuer may itself be issued by a root in `ca.crt`)",
  {
    kind: "differs",
    difference: "Counted on the certificates of `ca.crt` only: a chain through an intermediate that the pod sends, not in `ca.crt`, is refused (502), because Bun does not show the chain the pod sent.",
  },
);
export const PROXY_SSL_NAME: AnnotationSpec = spec(
  "proxy-ssl-name",
  "upstream_balancer",
  "name the pod's certificate must carry, and the SNI sent when `proxy-ssl-server-name` is on (nginx's default, `$proxy_host`, is `upstream_balancer` in ingress-nginx)",
  { kind: "differs", difference: "A DNS name only (nginx accepts variables and regex characters)." },
);
export const PROXY_SSL_SERVER_NAME: AnnotationSpec = spec(
  "proxy-ssl-server-name",
  "off",
  "`on`: send `proxy-ssl-name` as SNI (RFC 6066) to the pod",
  { kind: "same" },
);
export const PROXY_SSL_CIPHERS: AnnotationSpec = spec(
  "proxy-ssl-ciphers",
  "DEFAULT",
  "OpenSSL cipher string for TLS 1.2 to the pods (TLS 1.3 suites are not chosen by it, as in nginx)",
  { kind: "differs", difference: "Read with OpenSSL 3's rules over the TLS 1.2 suites Portico serves, as `ssl-ciphers` is (suites BoringSSL lacks, such as finite-field DHE, CAMELLIA or ARIA, are never offered); a string that leaves none of them, or that nginx would refuse, reads as `DEFAULT` with an InvalidAnnotation, where nginx's reload would fail." },
);
export const PROXY_SSL_PROTOCOLS: AnnotationSpec = spec(
  "proxy-ssl-protocols",
  "TLSv1.2",
  "TLS versions to the pods: `TLSv1.2`, `TLSv1.3` or both",
  { kind: "same" },
);

const NONE: UpstreamTlsPolicy = Object.freeze({ state: "none" });

/** The reason of the refusal a resolved policy replaces (compile/upstream-tls.ts removes it). */
export const UNRESOLVED = "proxy-ssl-secret has not been read";

export const UPSTREAM_TLS: Family<UpstreamTlsPolicy> = {
  name: "upstream-tls",
  annotations: [PROXY_SSL_SECRET, PROXY_SSL_VERIFY, PROXY_SSL_VERIFY_DEPTH, PROXY_SSL_NAME, PROXY_SSL_SERVER_NAME, PROXY_SSL_CIPHERS, PROXY_SSL_PROTOCOLS],
  none: NONE,
  // Until the compiler has read the Secret the paths refuse: a route is never served with
  // proxy-ssl-verify on but nothing verifying (compile/upstream-tls.ts lifts this).
  stages: (p) => (p.state === "invalid" ? [refuseStage(p.reason, true)] : p.state === "on" ? [refuseStage(UNRESOLVED)] : []),
  parse(r) {
    // ingress-nginx reads none of the others without the Secret (Parse returns on its error).
    const secret = r.read(PROXY_SSL_SECRET, SecretNsName, DENIED);
    if (secret.state === "unset") return NONE;
    if (secret.state === "invalid") return Object.freeze({ state: "invalid", reason: "proxy-ssl-secret is not namespace/name" });
    const verify = r.value(PROXY_SSL_VERIFY, OnOff) ?? false;
    const depth = r.value(PROXY_SSL_VERIFY_DEPTH, VerifyDepth) ?? 1;
    const sslName = r.value(PROXY_SSL_NAME, SslName) ?? null;
    const serverName = r.value(PROXY_SSL_SERVER_NAME, OnOff) ?? false;
    const ciphers = r.value(PROXY_SSL_CIPHERS, Ciphers) ?? DEFAULT_PROXY_SSL_CIPHERS;
    const protocols = r.value(PROXY_SSL_PROTOCOLS, Protocols) ?? ["TLSv1.2"];
    return Object.freeze({ state: "on", ...secret.value, verify, depth, sslName, serverName, ciphers, protocols: Object.freeze([...protocols]) });
  },
};
