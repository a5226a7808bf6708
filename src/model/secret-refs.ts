// The annotations that name a Secret an Ingress depends on (auth-secret, auth-tls-secret),
// kept with the object model because the store reads them to tell which Secret changes
// matter (store/store.ts) while the annotation families (annotations/basic-auth.ts,
// annotations/client-certs.ts) take their names from here: store/ never imports annotations/
// (docs/design.md, "Layout").

type Names = { readonly portico: `portico.dev/${string}`; readonly nginx: readonly string[] };

/** ingress-nginx's default `--annotations-prefix` (annotations/spec.ts has the same). */
const NGINX = "nginx.ingress.kubernetes.io/";

export const AUTH_SECRET_NAMES: Names = { portico: "portico.dev/auth-secret", nginx: [`${NGINX}auth-secret`] };
export const AUTH_TLS_SECRET_NAMES: Names = { portico: "portico.dev/auth-tls-secret", nginx: [`${NGINX}auth-tls-secret`] };

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
