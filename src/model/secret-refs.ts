// The annotations that name a Secret an Ingress depends on (auth-secret, auth-tls-secret), or
// a ConfigMap (auth-proxy-set-headers),
// kept with the object model because the store reads them to tell which Secret changes
// matter (store/store.ts) while the annotation families (annotations/basic-auth.ts,
// annotations/client-certs.ts) take their names from here: store/ never imports annotations/
// (docs/design.md, "Layout").
import { isRecord } from "./schemas.ts";

type Names = { readonly portico: `portico.dev/${string}`; readonly nginx: readonly string[] };

/** ingress-nginx's default `--annotations-prefix` (annotations/spec.ts has the same). */
const NGINX = "nginx.ingress.kubernetes.io/";

export const AUTH_SECRET_NAMES: Names = { portico: "portico.dev/auth-secret", nginx: [`${NGINX}auth-secret`] };
export const AUTH_TLS_SECRET_NAMES: Names = { portico: "portico.dev/auth-tls-secret", nginx: [`${NGINX}auth-tls-secret`] };
export const PROXY_SSL_SECRET_NAMES: Names = { portico: "portico.dev/proxy-ssl-secret", nginx: [`${NGINX}proxy-ssl-secret`] };

function secretKey(names: Names, annotations: Readonly<Record<string, string>> | null | undefined, namespace: string): string | null {
  if (!annotations) return null;
  for (const n of [names.portico, ...names.nginx]) {
    const value = annotations[n]?.trim();
    if (value === undefined || value === "") continue;
    return value.includes("/") ? value : `${namespace}/${value}`;
  }
  return null;
}

/**
 * `namespace/name` of the Secret an Ingress's auth-secret annotation names (its own namespace
 * when none is written), or null. The store uses it to tell which Secret changes matter; the
 * annotation's validity is the family's business.
 */
export const authSecretKey = (annotations: Readonly<Record<string, string>> | null | undefined, namespace: string): string | null =>
  secretKey(AUTH_SECRET_NAMES, annotations, namespace);

/**
 * `namespace/name` of the CA Secret an Ingress's auth-tls-secret names (its own namespace when
 * none is written), or null: the store watches it like a basic-auth Secret.
 */
export const caSecretKey = (annotations: Readonly<Record<string, string>> | null | undefined, namespace: string): string | null =>
  secretKey(AUTH_TLS_SECRET_NAMES, annotations, namespace);

/** `namespace/name` of the Secret proxy-ssl-secret names (client certificate and CA for HTTPS pods), or null. */
export const proxySslSecretKey = (annotations: Readonly<Record<string, string>> | null | undefined, namespace: string): string | null =>
  secretKey(PROXY_SSL_SECRET_NAMES, annotations, namespace);

/** auth-proxy-set-headers has ingress-nginx's name only (annotations/external-auth.ts). */
const AUTH_PROXY_SET_HEADERS_NAME = `${NGINX}auth-proxy-set-headers`;

/**
 * The ConfigMap key an annotation's `value` names, when it is `<namespace>/<name>` in the
 * object's own `namespace`, or null. ingress-nginx looks such a value up as written, as a
 * `namespace/name` store key (`GetConfigMap(value)`), so nothing else can ever be found, and
 * only such a ConfigMap is watched. The rest is the family's to refuse.
 */
export function ownNamespaceKey(value: string | null | undefined, namespace: string): string | null {
  const v = value?.trim();
  if (v === undefined || v === "") return null;
  const slash = v.indexOf("/");
  if (slash <= 0 || v.indexOf("/", slash + 1) >= 0 || slash === v.length - 1) return null;
  return v.slice(0, slash) === namespace ? v : null;
}

/**
 * The key of the ConfigMap an Ingress's auth-proxy-set-headers names, or null: authreq/main.go
 * looks it up as written (ownNamespaceKey), after refusing another namespace than the
 * Ingress's (without allow-cross-namespace-resources).
 */
export function authHeadersConfigMapKey(annotations: Readonly<Record<string, string>> | null | undefined, namespace: string): string | null {
  return ownNamespaceKey(annotations?.[AUTH_PROXY_SET_HEADERS_NAME], namespace);
}

/** custom-headers has ingress-nginx's name only (annotations/headers.ts). */
const CUSTOM_HEADERS_NAME = `${NGINX}custom-headers`;

/**
 * The key of the ConfigMap an Ingress's custom-headers names, read as auth-proxy-set-headers'
 * is: customheaders/main.go looks the value up as written (`GetConfigMap(value)`, store keys
 * `namespace/name`), and ingress-nginx's documentation allows the Ingress's own namespace
 * only, which is all Portico reads (compile/custom-headers.ts refuses the rest).
 */
export function customHeadersConfigMapKey(annotations: Readonly<Record<string, string>> | null | undefined, namespace: string): string | null {
  return ownNamespaceKey(annotations?.[CUSTOM_HEADERS_NAME], namespace);
}

/** Every ConfigMap an object's annotations name (auth-proxy-set-headers, custom-headers), each once. */
export function configMapKeys(annotations: Readonly<Record<string, string>> | null | undefined, namespace: string): readonly string[] {
  const a = authHeadersConfigMapKey(annotations, namespace);
  const c = customHeadersConfigMapKey(annotations, namespace);
  return a === null ? (c === null ? [] : [c]) : c === null || c === a ? [a] : [a, c];
}

type Ref = { readonly namespace: string; readonly name: string } | null | undefined;

/**
 * `namespace/name` of the ConfigMaps ingress-nginx's ConfigMap keys add-headers and
 * proxy-set-headers name (--add-headers, --proxy-set-headers; compile/global-headers.ts): the
 * store and the ConfigMap watch keep them as they keep the ones Ingresses name.
 */
export function settingsConfigMapKeys(c: { readonly addHeaders?: Ref; readonly proxySetHeaders?: Ref }): string[] {
  return [c.addHeaders, c.proxySetHeaders].flatMap((r) => (r == null ? [] : [`${r.namespace}/${r.name}`]));
}

/**
 * The most CA ConfigMaps one Gateway's spec.tls.frontend has read and watched: the ConfigMap
 * watch (kube/configmap-refs.ts) gives each object a fixed set of entries. FrontendTLSValidation
 * allows 16 caCertificateRefs per entry and 64 perPort entries (apis/v1 gateway_types.go); one
 * named past this bound is never read, so its listener says InvalidCACertificateRef and is not
 * served (fails closed).
 */
export const MAX_GATEWAY_CA_CONFIGMAPS = 16;

/**
 * `namespace/name` of the ConfigMaps a Gateway's spec.tls.frontend names as client certificate
 * CAs (`default` and every `perPort` entry's validation.caCertificateRefs of group "" and kind
 * ConfigMap, the only kind compile/gateway/attach.ts resolves), in order, each once, at most
 * MAX_GATEWAY_CA_CONFIGMAPS. Read as untyped data: --manifests objects skip the CRD's validation.
 */
export function gatewayCaConfigMapKeys(spec: unknown, namespace: string): string[] {
  const out: string[] = [];
  const rec = (x: unknown): Record<string, unknown> | null => (isRecord(x) ? x : null);
  const frontend = rec(rec(rec(spec)?.tls)?.frontend);
  if (frontend === null) return out;
  const configs: unknown[] = [frontend.default];
  if (Array.isArray(frontend.perPort)) for (const e of frontend.perPort) configs.push(rec(e)?.tls);
  for (const c of configs) {
    const refs = rec(rec(c)?.validation)?.caCertificateRefs;
    if (!Array.isArray(refs)) continue;
    for (const r of refs) {
      const ref = rec(r);
      if (ref === null || typeof ref.name !== "string" || ref.name === "" || ref.kind !== "ConfigMap" || (ref.group !== undefined && ref.group !== null && ref.group !== "")) continue;
      const key = `${typeof ref.namespace === "string" && ref.namespace !== "" ? ref.namespace : namespace}/${ref.name}`;
      if (!out.includes(key)) out.push(key);
      if (out.length === MAX_GATEWAY_CA_CONFIGMAPS) return out;
    }
  }
  return out;
}
