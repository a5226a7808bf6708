// Redirects the proxy answers itself for the routes of one Ingress: permanent-/temporal-
// redirect, app-root, the www redirect and whether those carry the port. The proxy runs them
// as stage policies (src/kinds/server.ts and src/kinds/redirects.ts); app-root and the www redirect apply to the whole
// host, which table/build.ts arranges. Values are read as ingress-nginx's redirect, rewrite
// and portinredirect parsers read them (internal/ingress/annotations/), including what an
// invalid value does there.
import * as v from "valibot";
import type { AnnotationSpec, Family, Reader } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool, GoInt } from "./values.ts";
import { APP_ROOT_VARIABLES, appRootParts } from "../policy/template.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";

export interface RedirectPolicy {
  readonly url: string;
  readonly code: number;
  /** relative-redirects: a Location starting with `/` is sent as written (nginx `absolute_redirect off`). */
  readonly relative: boolean;
}

export interface RedirectsPolicy {
  /** permanent-redirect or temporal-redirect: every request of the Ingress's routes gets it. */
  readonly redirect: RedirectPolicy | null;
  /** app-root: the path `/` of the Ingress's hosts redirects to. */
  readonly appRoot: string | null;
  readonly fromToWww: boolean;
  readonly usePortInRedirects: boolean;
  /**
   * Why ingress-nginx would refuse the whole Ingress (a malformed redirect value fails its
   * validation); null when it would not.
   */
  readonly denied: string | null;
}

const DENIED = "every path of this Ingress answers 503 (ingress-nginx refuses the whole Ingress)";
const GROUP_OFF =
  "the Ingress's from-to-www-redirect, relative-redirects, permanent-redirect, temporal-redirect and their codes are ignored, as ingress-nginx ignores them";
/** ingress-nginx validates non-empty values only: an empty one fails its parser instead, which turns the group off. */
const GROUP: { readonly empty: string; readonly invalid: string } = { empty: GROUP_OFF, invalid: DENIED };

const DENIED_NOTE =
  "A malformed value makes every path of the Ingress answer 503 (ingress-nginx rejects the whole Ingress: its admission webhook refuses it, or it is not served); an empty one turns the redirect annotations off, as in ingress-nginx.";
/**
 * The difference for a value Portico accepted (the migration report's): what a malformed or
 * empty value does does not concern it; "" when nothing else differs (then it is the same).
 */
const forValid = (difference: string) => (): string => difference.replace(DENIED_NOTE, "").trim();

const BODY_NOTE = "Without --ingress-nginx-compat the redirect has an empty body (nginx sends a short HTML page, as Portico does with the flag).";
const NO_HOST_NOTE = "A request without Host (HTTP/1.0) gets 400 where a relative URL needs the host (nginx writes its own address).";

// ingress-nginx's URLIsValidRegex (parser/validators.go): URL characters, no `$` (nginx
// variables), spaces or quotes.
const URL_CHARS = /^[A-Za-z0-9\-._~/:,?&=]*$/;
const RedirectUrl = v.pipe(
  v.string(),
  v.minLength(1, "an empty value is invalid"),
  v.regex(URL_CHARS, "only A-Z a-z 0-9 - . _ ~ / : , ? & = are allowed"),
);

export const PERMANENT_REDIRECT: AnnotationSpec = {
  portico: "portico.dev/permanent-redirect",
  nginx: [`${NGINX_PREFIX}permanent-redirect`],
  family: "redirects",
  default: "none",
  description:
    "URL (`A-Za-z0-9-._~/:,?&=`): every request of the Ingress is answered with a redirect there (the query is not added); a URL starting with `/` is made absolute with the connection's scheme and the request's host",
  compat: { kind: "differs", difference: `${BODY_NOTE} ${NO_HOST_NOTE} ${DENIED_NOTE}` },
  differenceFor: forValid(`${BODY_NOTE} ${NO_HOST_NOTE} ${DENIED_NOTE}`),
};

export const PERMANENT_REDIRECT_CODE: AnnotationSpec = {
  portico: "portico.dev/permanent-redirect-code",
  nginx: [`${NGINX_PREFIX}permanent-redirect-code`],
  family: "redirects",
  default: "301",
  description:
    "status of `permanent-redirect`; outside 300-308 it is 301; 300, 304, 305 and 306 send the URL as the body, without Location (nginx's `return`)",
  compat: { kind: "differs", difference: `Read even without \`permanent-redirect\`, as ingress-nginx does. ${DENIED_NOTE}` },
  differenceFor: forValid(`Read even without \`permanent-redirect\`, as ingress-nginx does. ${DENIED_NOTE}`),
};

export const TEMPORAL_REDIRECT: AnnotationSpec = {
  portico: "portico.dev/temporal-redirect",
  nginx: [`${NGINX_PREFIX}temporal-redirect`],
  family: "redirects",
  default: "none",
  description:
    "as `permanent-redirect`, but its scheme must start with `http` (otherwise the redirect annotations are ignored); wins over `permanent-redirect`, which is then not read",
  compat: { kind: "differs", difference: `${BODY_NOTE} ${DENIED_NOTE}` },
  differenceFor: forValid(`${BODY_NOTE} ${DENIED_NOTE}`),
};

export const TEMPORAL_REDIRECT_CODE: AnnotationSpec = {
  portico: "portico.dev/temporal-redirect-code",
  nginx: [`${NGINX_PREFIX}temporal-redirect-code`],
  family: "redirects",
  default: "302",
  description: "status of `temporal-redirect`; outside 300-307 it is 302 (so 308 gives 302)",
  compat: { kind: "differs", difference: DENIED_NOTE },
  differenceFor: forValid(DENIED_NOTE),
};

export const RELATIVE_REDIRECTS: AnnotationSpec = {
  portico: "portico.dev/relative-redirects",
  nginx: [`${NGINX_PREFIX}relative-redirects`],
  family: "redirects",
  default: "false",
  description: "`true`: a redirect URL starting with `/` is sent as written instead of being made absolute",
  compat: {
    kind: "differs",
    difference: DENIED_NOTE,
  },
  differenceFor: forValid(`Portico has no global setting for it (ingress-nginx: ConfigMap \`relative-redirects\`, default false as here). ${DENIED_NOTE}`),
};

export const FROM_TO_WWW_REDIRECT: AnnotationSpec = {
  portico: "portico.dev/from-to-www-redirect",
  nginx: [`${NGINX_PREFIX}from-to-www-redirect`],
  family: "redirects",
  default: "false",
  description:
    "`true`: requests for the host's other name (`www.` added or removed) get `--http-redirect-code` (308) to `<scheme>://<host>:<port><path and query, one trailing / cut>`; not when an Ingress has that name",
  compat: {
    kind: "differs",
    difference: `The port in the Location is the one the client addressed (a trusted proxy's X-Forwarded-Port, else the Host header's, else 80/443), where ingress-nginx writes the port nginx listens on: the same in ingress-nginx's usual deployment, and right behind a Service that maps 80/443 to 8080/8443. HTTPS for the other name needs it in \`spec.tls\` (ingress-nginx: a certificate of the host that covers it). ${DENIED_NOTE}`,
  },
  differenceFor: forValid(`The port in the Location is the one the client addressed (a trusted proxy's X-Forwarded-Port, else the Host header's, else 80/443), where ingress-nginx writes the port nginx listens on: the same in ingress-nginx's usual deployment, and right behind a Service that maps 80/443 to 8080/8443. HTTPS for the other name needs it in \`spec.tls\` (ingress-nginx: a certificate of the host that covers it). ${DENIED_NOTE}`),
};

export const APP_ROOT: AnnotationSpec = {
  portico: "portico.dev/app-root",
  nginx: [`${NGINX_PREFIX}app-root`],
  family: "redirects",
  default: "none",
  description:
    "path (`/` then `A-Za-z0-9-._~/:`, and nginx variables: `$args`, `$query_string`, `$is_args`, `$request_uri`, `$uri`, `$document_uri`, `$scheme`, `$host`, `$http_host`): a request for exactly `/` on the Ingress's hosts, whichever Ingress serves `/`, gets 302 to `<scheme>://<Host header><path>` with the variables expanded (`/login$is_args$args` keeps the query; without variables the query is dropped), before the HTTPS redirect",
  compat: {
    kind: "differs",
    difference:
      "Another nginx variable is an InvalidAnnotation and the app-root is ignored (nginx refuses an unknown variable at `nginx -t`; the ones it knows, such as `$cookie_x`, are not supported). `$request_uri` is the normalised path and the query as received. The scheme is the connection's, even behind a trusted proxy, as ingress-nginx's `$scheme`. A request without Host (HTTP/1.0) gets 400 (ingress-nginx: `http:///path`).",
  },
};

export const USE_PORT_IN_REDIRECTS: AnnotationSpec = {
  portico: "portico.dev/use-port-in-redirects",
  nginx: [`${NGINX_PREFIX}use-port-in-redirects`],
  family: "redirects",
  default: "false",
  description:
    "`true`: the HTTPS redirect's Location carries `:<--https-port>` (even 443), and a relative redirect URL made absolute carries the port the request came in on unless it is 80 (HTTP) or 443 (HTTPS)",
  compat: { kind: "same" },
};

// ingress-nginx reads app-root with RegexPathWithCapture, then url.ParseRequestURI, and
// ignores anything absolute (with a scheme): what is left is a path starting with `/`, which
// may hold nginx variables (APP_ROOT_VARIABLES).
const AppRoot = v.pipe(
  v.string(),
  v.regex(/^\/[A-Za-z0-9\-._~/:$]*$/, "expected a path starting with / (A-Z a-z 0-9 - . _ ~ / : and nginx variables with $)"),
  v.check((s) => appRootParts(s) !== null, `a \`$\` must start one of the nginx variables ${[...APP_ROOT_VARIABLES].map((n) => `$${n}`).join(", ")}`),
);

/**
 * The scheme Go's url.Parse finds in `s` (lowercased, "" for none), or null where url.Parse
 * fails, for the characters RedirectUrl lets through: `:` first ("missing protocol scheme"),
 * a colon in the first segment of a scheme-less URL, or a port that is not digits.
 */
export function goUrlScheme(s: string): string | null {
  let scheme = "";
  let rest = s;
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (/[A-Za-z]/.test(c)) continue;
    if (/[0-9+\-.]/.test(c) && i > 0) continue;
    if (c === ":") {
      if (i === 0) return null;
      scheme = s.slice(0, i).toLowerCase();
      rest = s.slice(i + 1);
    }
    break;
  }
  rest = rest.split("?")[0] as string;
  if ((scheme !== "" || !rest.startsWith("///")) && rest.startsWith("//")) {
    const end = rest.indexOf("/", 2);
    const authority = end < 0 ? rest.slice(2) : rest.slice(2, end);
    const colon = authority.lastIndexOf(":");
    if (colon >= 0 && !/^[0-9]*$/.test(authority.slice(colon + 1))) return null;
  } else if (scheme === "" && !rest.startsWith("/") && (rest.split("/")[0] as string).includes(":")) {
    return null;
  }
  return scheme;
}

const NONE: RedirectsPolicy = Object.freeze({ redirect: null, appRoot: null, fromToWww: false, usePortInRedirects: false, denied: null });

/** The redirect group of one Ingress, or what stops it ("off": ignored; a string: denied). */
type Group = { redirect: RedirectPolicy | null; fromToWww: boolean } | "off" | { denied: string };

/**
 * ingress-nginx's redirect parser, step by step and in its order: the first value that fails
 * decides, and nothing after it is read. A validation failure (a malformed value) refuses
 * the Ingress; an empty value, or a temporal-redirect whose scheme is not http(s), turns the
 * group off.
 */
function readGroup(r: Reader): Group {
  type Step<T> = { ok: T | undefined } | "off" | "denied";
  const step = <T>(spec: AnnotationSpec, schema: v.GenericSchema<string, T>): Step<T> => {
    const res = r.read(spec, schema, GROUP);
    if (res.state === "invalid") return res.empty ? "off" : "denied";
    return { ok: res.state === "ok" ? res.value : undefined };
  };
  const denied = (spec: AnnotationSpec): Group => ({ denied: `annotation ${spec.nginx[0]} is malformed` });

  const www = step(FROM_TO_WWW_REDIRECT, Bool);
  if (typeof www === "string") return www === "off" ? "off" : denied(FROM_TO_WWW_REDIRECT);
  const fromToWww = www.ok ?? false;
  const rel = step(RELATIVE_REDIRECTS, Bool);
  if (typeof rel === "string") return rel === "off" ? "off" : denied(RELATIVE_REDIRECTS);
  const relative = rel.ok ?? false;

  const temporal = r.read(TEMPORAL_REDIRECT, RedirectUrl, GROUP);
  if (temporal.state === "invalid") return temporal.empty ? "off" : denied(TEMPORAL_REDIRECT);
  if (temporal.state === "ok") {
    const tc = step(TEMPORAL_REDIRECT_CODE, GoInt);
    if (typeof tc === "string") return tc === "off" ? "off" : denied(TEMPORAL_REDIRECT_CODE);
    const code = tc.ok !== undefined && tc.ok >= 300 && tc.ok <= 307 ? tc.ok : 302;
    const scheme = goUrlScheme(temporal.value);
    if (scheme === null || !scheme.startsWith("http")) {
      r.problem(`annotation ${temporal.name}=${JSON.stringify(temporal.raw)}: only http and https URLs are accepted; ${GROUP_OFF}`);
      return "off";
    }
    return { redirect: { url: temporal.value, code, relative }, fromToWww };
  }

  const pr = step(PERMANENT_REDIRECT, RedirectUrl);
  if (typeof pr === "string") return pr === "off" ? "off" : denied(PERMANENT_REDIRECT);
  const pc = step(PERMANENT_REDIRECT_CODE, GoInt);
  if (typeof pc === "string") return pc === "off" ? "off" : denied(PERMANENT_REDIRECT_CODE);
  const code = pc.ok !== undefined && pc.ok >= 300 && pc.ok <= 308 ? pc.ok : 301;
  return { redirect: pr.ok === undefined ? null : { url: pr.ok, code, relative }, fromToWww };
}

export const REDIRECTS: Family<RedirectsPolicy> = {
  name: "redirects",
  annotations: [
    PERMANENT_REDIRECT,
    PERMANENT_REDIRECT_CODE,
    TEMPORAL_REDIRECT,
    TEMPORAL_REDIRECT_CODE,
    RELATIVE_REDIRECTS,
    FROM_TO_WWW_REDIRECT,
    APP_ROOT,
    USE_PORT_IN_REDIRECTS,
  ],
  none: NONE,
  stages: (p) => [
    ...(p.appRoot === null ? [] : [stagePolicy(K.APP_ROOT, { path: p.appRoot })]),
    ...(p.redirect === null ? [] : [stagePolicy(K.REDIRECT, { ...p.redirect })]),
  ],
  parse(r) {
    const group = readGroup(r);
    // app-root belongs to ingress-nginx's rewrite parser and use-port-in-redirects to its own:
    // an invalid value there is only ignored.
    const appRoot = r.read(APP_ROOT, AppRoot, "ignored, as ingress-nginx ignores an app-root it cannot use");
    const usePortInRedirects = r.value(USE_PORT_IN_REDIRECTS, Bool) ?? false;
    const out: RedirectsPolicy = {
      redirect: group === "off" || "denied" in group ? null : group.redirect,
      fromToWww: group !== "off" && !("denied" in group) && group.fromToWww,
      appRoot: appRoot.state === "ok" ? appRoot.value : null,
      usePortInRedirects,
      denied: group !== "off" && "denied" in group ? group.denied : null,
    };
    if (out.redirect === null && !out.fromToWww && out.appRoot === null && !usePortInRedirects && out.denied === null) return NONE;
    return Object.freeze({ ...out, redirect: out.redirect && Object.freeze(out.redirect) });
  },
};
