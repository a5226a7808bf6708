// Basic authentication for the routes of one Ingress (ingress-nginx's auth-type, auth-secret,
// auth-secret-type, auth-realm; nginx's auth_basic). This family reads the annotations; the
// compiler resolves the Secret into the users (compile/access.ts) and the proxy checks the
// credentials (kinds/basic-auth.ts). Access control fails closed: whatever cannot be applied
// as written makes the routes refuse every request, never serve them open.
import * as v from "valibot";
import { REFUSED_STATUS } from "./access-stages.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { AUTH_SECRET_NAMES } from "../model/secret-refs.ts";
import { basicAuthStage, refuseStage } from "./access-stages.ts";

export type SecretType = "auth-file" | "auth-map";

export type BasicAuthPolicy =
  | { readonly state: "none" }
  /** The annotations ask for authentication that cannot be applied: refuse every request. */
  | { readonly state: "invalid"; readonly reason: string }
  | {
      readonly state: "basic";
      /** The Secret's namespace as written (null: the Ingress's own) and name. */
      readonly namespace: string | null;
      readonly name: string;
      readonly secretType: SecretType;
      readonly realm: string;
    };

const REFUSE = `every path of the Ingress answers ${REFUSED_STATUS} until it is fixed`;

// Kubernetes object names: a namespace is a DNS-1123 label, a Secret name a DNS-1123 subdomain.
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `name` or `namespace/name` (client-go's SplitMetaNamespaceKey, which ingress-nginx uses). */
export const SecretRef = v.pipe(
  v.string(),
  v.trim(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const parts = dataset.value.split("/");
    const [ns, name] = parts.length === 2 ? parts : [null, parts[0]];
    if (parts.length > 2 || name === undefined || !SUBDOMAIN.test(name) || (ns !== null && !LABEL.test(ns as string))) {
      addIssue({ message: "expected a Secret name or namespace/name" });
      return NEVER;
    }
    return { namespace: ns as string | null, name };
  }),
);

/**
 * `basic` only. ingress-nginx also has `digest` (a third-party nginx module with htdigest
 * files), which Portico does not implement: refused like any other value, never served open.
 */
const AuthType = v.pipe(
  v.string(),
  v.trim(),
  v.check((s) => s !== "digest", "digest authentication is not implemented by Portico"),
  v.check((s) => s === "basic", "expected basic"),
);

/** An empty value is the default, as ingress-nginx reads it (its parser's "invalid content" is not a validation error there). */
const AuthSecretType = v.pipe(
  v.string(),
  v.trim(),
  v.transform((s) => (s === "" ? "auth-file" : s)),
  v.picklist(["auth-file", "auth-map"], "expected auth-file or auth-map"),
);

/**
 * ingress-nginx's validator for auth-realm (letters, digits, space and `-._~/:`), which also
 * keeps the realm safe inside the quoted string of WWW-Authenticate (no `"` or `\`).
 */
const Realm = v.pipe(v.string(), v.trim(), v.regex(/^[A-Za-z0-9 ._~/:-]*$/, "expected letters, digits, spaces and -._~/: only"));

export const AUTH_TYPE: AnnotationSpec = {
  portico: "portico.dev/auth-type",
  nginx: [`${NGINX_PREFIX}auth-type`],
  family: "basic-auth",
  default: "none",
  description: "`basic`: ask for a user and password from `auth-secret` (401 until given)",
  compat: {
    kind: "differs",
    difference: `\`digest\` is not implemented: the Ingress answers ${REFUSED_STATUS} on every path. Any value other than \`basic\` also answers ${REFUSED_STATUS} (ingress-nginx drops the Ingress for a value without \`basic\` or \`digest\` in it, and serves digest for \`basic2\`). \`auth-secret\`, \`auth-secret-type\` or \`auth-realm\` without \`auth-type\` answers ${REFUSED_STATUS} (ingress-nginx ignores them and serves the Ingress without authentication). \`basic\` is served the same.`,
  },
  sameWhen: (value) => value.trim() === "basic",
};

export const AUTH_SECRET: AnnotationSpec = {
  portico: AUTH_SECRET_NAMES.portico,
  nginx: AUTH_SECRET_NAMES.nginx,
  family: "basic-auth",
  default: "none",
  description: "`name` or `namespace/name` of the Secret holding the users; watched, so a change applies without a restart",
  compat: {
    kind: "differs",
    difference: `Like ingress-nginx (without \`allow-cross-namespace-resources\`, its default since v1.12), a Secret in another namespace, a missing Secret or a missing \`auth\` key answers ${REFUSED_STATUS}; cross-namespace Secrets are never allowed. A Secret of type \`kubernetes.io/service-account-token\`, \`kubernetes.io/dockercfg\`, \`kubernetes.io/dockerconfigjson\`, \`bootstrap.kubernetes.io/token\` or \`helm.sh/release.v1\` is not watched and counts as missing (the report shows that Ingress refused). A Secret named without a namespace is served the same.`,
  },
  sameWhen: (value) => !value.includes("/") && v.is(SecretRef, value),
};

export const AUTH_SECRET_TYPE: AnnotationSpec = {
  portico: "portico.dev/auth-secret-type",
  nginx: [`${NGINX_PREFIX}auth-secret-type`],
  family: "basic-auth",
  default: "auth-file",
  description: "`auth-file`: htpasswd lines in the key `auth`; `auth-map`: each key a user, its value the hash",
  compat: {
    kind: "differs",
    difference: `A bad value answers ${REFUSED_STATUS} (ingress-nginx drops the Ingress). An \`auth-map\` value is read up to its first line end (ingress-nginx writes it into an htpasswd file, where further lines become more users). \`auth-file\` is served the same.`,
  },
  sameWhen: (value) => value.trim() === "auth-file",
};

export const AUTH_REALM: AnnotationSpec = {
  portico: "portico.dev/auth-realm",
  nginx: [`${NGINX_PREFIX}auth-realm`],
  family: "basic-auth",
  default: '""',
  description: 'the realm in `WWW-Authenticate: Basic realm="…"`: letters, digits, spaces and `-._~/:`',
  compat: {
    kind: "differs",
    difference: `A bad value answers ${REFUSED_STATUS} (ingress-nginx drops the Ingress). The realm \`off\` is a realm like any other (nginx reads \`auth_basic "off"\` as no authentication at all). Any other non-empty realm Portico accepts is served the same.`,
  },
  sameWhen: (value) => value.trim() !== "" && value.trim().toLowerCase() !== "off" && v.is(Realm, value),
};

/**
 * Rule paths that skip authentication (basic and external) unless --no-auth-locations says
 * otherwise: ingress-nginx's ConfigMap `no-auth-locations` default (config.go NewDefault), so
 * ACME HTTP-01 challenges added to a protected Ingress still reach the solver.
 */
export const NO_AUTH_LOCATIONS: readonly string[] = Object.freeze(["/.well-known/acme-challenge"]);

/**
 * Whether a rule path, as written in the Ingress, skips authentication. ingress-nginx's
 * template leaves auth_basic and auth_request out of a location when isLocationInLocationList
 * (template.go) holds: `strings.HasPrefix(loc.Path, entry)` on the path as written, for each
 * entry of no-auth-locations. So the written path decides, never its routed form:
 * `//.well-known/acme-challenge` or `/%2Ewell-known/acme-challenge` route like
 * `/.well-known/acme-challenge` here but are authenticated under ingress-nginx, and must be here too.
 */
export function skipsAuthentication(writtenPath: string, locations: readonly string[] = NO_AUTH_LOCATIONS): boolean {
  return locations.some((p) => writtenPath.startsWith(p));
}

const NONE: BasicAuthPolicy = Object.freeze({ state: "none" });

export const BASIC_AUTH: Family<BasicAuthPolicy> = {
  name: "basic-auth",
  annotations: [AUTH_TYPE, AUTH_SECRET, AUTH_SECRET_TYPE, AUTH_REALM],
  none: NONE,
  // compile/access.ts puts the users in once it has read the Secret; until then the proxy refuses.
  stages: (b) =>
    b.state === "invalid" ? [refuseStage(b.reason)] : b.state === "basic" ? [basicAuthStage(b.realm, b.namespace === null ? b.name : `${b.namespace}/${b.name}`, null)] : [],
  parse(r) {
    const type = r.read(AUTH_TYPE, AuthType, REFUSE);
    const secret = r.read(AUTH_SECRET, SecretRef, REFUSE);
    const secretType = r.read(AUTH_SECRET_TYPE, AuthSecretType, REFUSE);
    const realm = r.read(AUTH_REALM, Realm, REFUSE);
    const reads = [type, secret, secretType, realm];
    if (reads.every((x) => x.state === "unset")) return NONE;
    const invalid = (reason: string): BasicAuthPolicy => Object.freeze({ state: "invalid", reason });
    if (reads.some((x) => x.state === "invalid")) return invalid("an authentication annotation is invalid");
    if (type.state === "unset") {
      // ingress-nginx serves the Ingress without authentication here: the user asked for some.
      r.problem(`auth-type is not set, so the other authentication annotations cannot apply; ${REFUSE}`);
      return invalid("auth-type is not set");
    }
    if (secret.state !== "ok") {
      r.problem(`auth-type is set without auth-secret; ${REFUSE}`);
      return invalid("auth-secret is not set");
    }
    return Object.freeze({
      state: "basic",
      namespace: secret.value.namespace,
      name: secret.value.name,
      secretType: secretType.state === "ok" ? secretType.value : "auth-file",
      realm: realm.state === "ok" ? realm.value : "",
    });
  },
};
