// Client certificates for the routes of one Ingress (ingress-nginx's auth-tls-secret,
// auth-tls-verify-client, auth-tls-verify-depth, auth-tls-error-page,
// auth-tls-pass-certificate-to-upstream, auth-tls-match-cn: internal/ingress/annotations/authtls/main.go, and the
// SERVER block of rootfs/etc/nginx/template/nginx.tmpl). This family reads the annotations;
// the compiler reads the CA Secret (compile/access.ts) and the proxy checks each request's
// certificate against it (kinds/client-cert.ts). docs/design.md, "Client certificates".
import * as v from "valibot";
import { REFUSED_STATUS } from "./access-stages.ts";
import { SecretRef } from "./basic-auth.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { AUTH_TLS_SECRET_NAMES } from "../model/secret-refs.ts";
import { Bool, VerifyDepth } from "./values.ts";
import { compileHeaderPattern } from "../regex/header-pattern.ts";
import { clientCertStage, refuseStage } from "./access-stages.ts";

export type VerifyClient = "on" | "off" | "optional" | "optional_no_ca";

export type ClientCertPolicy =
  | { readonly state: "none" }
  /** The annotations ask for client certificates in a way that cannot be applied: refuse every request. */
  | { readonly state: "invalid"; readonly reason: string }
  | {
      readonly state: "on";
      /** The CA Secret's namespace as written (null: the Ingress's own) and name. */
      readonly namespace: string | null;
      readonly name: string;
      readonly verify: VerifyClient;
      readonly depth: number;
      readonly errorPage: string | null;
      readonly passCertificate: boolean;
      /** auth-tls-match-cn: checked as a pattern when parsed; null when unset. */
      readonly matchCn: string | null;
    };

const REFUSE = `every path of the Ingress answers ${REFUSED_STATUS} until it is fixed`;

/** ingress-nginx's authVerifyClientRegex; anything else is read as `on` there, and here. */
const Verify = v.pipe(v.string(), v.trim(), v.picklist(["on", "off", "optional", "optional_no_ca"], "expected on, off, optional or optional_no_ca"));

/**
 * ingress-nginx's redirectRegex for auth-tls-error-page, without its `@name` form (an nginx
 * named location, which Portico has no counterpart of): an http(s) URL, a host, or a path.
 */
const ErrorPage = v.pipe(
  v.string(),
  v.trim(),
  v.check((s) => !s.startsWith("@"), "an nginx named location (@name) has no meaning in Portico"),
  v.regex(/^((https?:\/\/)?[A-Za-z0-9\-.]+(:\d+)?)?(\/[A-Za-z0-9\-_.]+)*\/?$/, "expected a URL or a path of letters, digits and -_."),
);

/**
 * auth-tls-match-cn: ingress-nginx's parser.CommonNameAnnotationValidator wants `CN=` then a
 * regular expression, and nginx.tmpl matches the whole value, `CN=` included, against
 * $ssl_client_s_dn (`if ( $ssl_client_s_dn !~ "<value>" ) { return 403 ...; }`): PCRE,
 * unanchored, case-sensitive. Portico runs it on the linear-time engine
 * (regex/header-pattern.ts, the same unanchored find), so a pattern it cannot run there, or
 * one too large, is invalid here.
 */
const MatchCn = v.pipe(
  v.string(),
  v.check((s) => s.startsWith("CN="), "expected CN= followed by a regular expression"),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const c = compileHeaderPattern(dataset.value);
    if (!c.ok) addIssue({ message: `the pattern ${c.reason}` });
  }),
);

export const AUTH_TLS_SECRET: AnnotationSpec = {
  portico: AUTH_TLS_SECRET_NAMES.portico,
  nginx: AUTH_TLS_SECRET_NAMES.nginx,
  family: "client-certs",
  default: "none",
  description: "`name` or `namespace/name` of the Secret whose `ca.crt` client certificates must chain to; watched, so a change applies without a restart",
  compat: {
    kind: "differs",
    difference: `As in ingress-nginx, it applies to the whole host: the first Ingress of the host (oldest first) with a usable CA covers the paths of every Ingress there, and a Secret that cannot be used (missing, in another namespace, no \`ca.crt\`, no certificate in it) makes the whole host answer 403; with \`--host-policy-scope=namespace\`, only the Ingresses in the namespace of the host's oldest Ingress count (README, "Host-wide policies"). Differences: \`ca.crl\` is not read; plain-HTTP requests to these paths count as carrying no certificate (nginx does not check them); while any route uses client certificates, clients are asked for one on every HTTPS handshake of the port (the runtime cannot ask per host); with none, no handshake asks. While such a route exists the HTTPS port is served by the node:http2 listener, which is slower for every request: Bun.serve cannot show a request's certificate.`,
  },
};

export const AUTH_TLS_VERIFY_CLIENT: AnnotationSpec = {
  portico: "portico.dev/auth-tls-verify-client",
  nginx: [`${NGINX_PREFIX}auth-tls-verify-client`],
  family: "client-certs",
  default: "on",
  description: "`on`: a verified certificate is required (400 otherwise); `optional`: none passes, a bad one is 400; `optional_no_ca`: an untrusted one passes too; `off`: none is checked",
  compat: { kind: "same" },
};

export const AUTH_TLS_VERIFY_DEPTH: AnnotationSpec = {
  portico: "portico.dev/auth-tls-verify-depth",
  nginx: [`${NGINX_PREFIX}auth-tls-verify-depth`],
  family: "client-certs",
  default: "1",
  description: "CA certificates allowed above the client's (1: issued by a CA in `ca.crt`; 2: through one intermediate)",
  compat: { kind: "differs", difference: "A negative value or one above 100 is invalid and reads as 1 (nginx refuses the configuration for a negative one)." },
};

export const AUTH_TLS_ERROR_PAGE: AnnotationSpec = {
  portico: "portico.dev/auth-tls-error-page",
  nginx: [`${NGINX_PREFIX}auth-tls-error-page`],
  family: "client-certs",
  default: "none",
  description: "where a client whose certificate is missing or fails is redirected (302) instead of the 400",
  compat: {
    kind: "differs",
    difference: `A path is a 302 to that path too (nginx serves it internally); an \`@name\` location or another bad value answers ${REFUSED_STATUS} (ingress-nginx drops the Ingress).`,
  },
};

export const AUTH_TLS_PASS_CERTIFICATE: AnnotationSpec = {
  portico: "portico.dev/auth-tls-pass-certificate-to-upstream",
  nginx: [`${NGINX_PREFIX}auth-tls-pass-certificate-to-upstream`],
  family: "client-certs",
  default: "false",
  description: "send the client's certificate to the pods in `ssl-client-cert` (URL-encoded PEM, nginx's `$ssl_client_escaped_cert`)",
  compat: {
    kind: "differs",
    difference: `A bad value answers ${REFUSED_STATUS} (ingress-nginx drops the Ingress). When it is off, an \`ssl-client-cert\` field the client sent is removed (nginx forwards it).`,
  },
};

export const AUTH_TLS_MATCH_CN: AnnotationSpec = {
  portico: "portico.dev/auth-tls-match-cn",
  nginx: [`${NGINX_PREFIX}auth-tls-match-cn`],
  family: "client-certs",
  default: "none",
  description:
    "`CN=` and a regular expression matched, unanchored and case-sensitive, against the client certificate's subject in RFC 2253 form (`CN=alice,O=Acme`, nginx's `$ssl_client_s_dn`); a request whose subject does not match, or that carries no certificate, gets 403 `client certificate unauthorized`",
  compat: {
    kind: "differs",
    difference: `The pattern runs on a linear-time engine: backreferences and lookaround are refused, and a refused or otherwise invalid value answers ${REFUSED_STATUS} on every path (ingress-nginx drops the Ingress). A pattern it runs is served the same.`,
  },
  // A value the engine runs is answered as ingress-nginx answers it (the migration report).
  sameWhen: (value) => v.is(MatchCn, value),
};

const NONE: ClientCertPolicy = Object.freeze({ state: "none" });

export const CLIENT_CERTS: Family<ClientCertPolicy> = {
  name: "client-certs",
  annotations: [AUTH_TLS_SECRET, AUTH_TLS_VERIFY_CLIENT, AUTH_TLS_VERIFY_DEPTH, AUTH_TLS_ERROR_PAGE, AUTH_TLS_PASS_CERTIFICATE, AUTH_TLS_MATCH_CN],
  none: NONE,
  // compile/access.ts puts the CA in once it has read the Secret; until then the proxy refuses.
  stages: (c) =>
    c.state === "invalid" ? [refuseStage(c.reason)] : c.state === "on" ? [clientCertStage(c, c.namespace === null ? c.name : `${c.namespace}/${c.name}`, null)] : [],
  parse(r) {
    const secret = r.read(AUTH_TLS_SECRET, SecretRef, REFUSE);
    const verify = r.read(AUTH_TLS_VERIFY_CLIENT, Verify, "using on");
    const depth = r.read(AUTH_TLS_VERIFY_DEPTH, VerifyDepth, "using 1");
    const errorPage = r.read(AUTH_TLS_ERROR_PAGE, ErrorPage, REFUSE);
    const pass = r.read(AUTH_TLS_PASS_CERTIFICATE, Bool, REFUSE);
    const matchCn = r.read(AUTH_TLS_MATCH_CN, MatchCn, REFUSE);
    if ([secret, verify, depth, errorPage, pass, matchCn].every((x) => x.state === "unset")) return NONE;
    const invalid = (reason: string): ClientCertPolicy => Object.freeze({ state: "invalid", reason });
    if (secret.state === "invalid" || errorPage.state === "invalid" || pass.state === "invalid" || matchCn.state === "invalid") return invalid("a client-certificate annotation is invalid");
    if (secret.state === "unset") {
      // ingress-nginx ignores the others without a CA and serves the Ingress unchecked; the
      // author asked for client certificates, so Portico refuses instead.
      r.problem(`auth-tls-* is set without auth-tls-secret; ${REFUSE}`);
      return invalid("auth-tls-secret is not set");
    }
    return Object.freeze({
      state: "on",
      namespace: secret.value.namespace,
      name: secret.value.name,
      verify: verify.state === "ok" ? verify.value : "on",
      depth: depth.state === "ok" ? depth.value : 1,
      errorPage: errorPage.state === "ok" ? errorPage.value : null,
      passCertificate: pass.state === "ok" ? pass.value : false,
      matchCn: matchCn.state === "ok" ? matchCn.value : null,
    });
  },
};
