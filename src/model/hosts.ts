// Rule and TLS host validation. Kubernetes validates spec.rules[].host as a DNS-1123
// subdomain, optionally prefixed by "*." (networking/v1 types.go: "the wildcard character
// '*' must appear by itself as the first DNS label"); we re-check because --manifests
// objects never went through the API server.

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function isDnsName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false;
  for (const label of name.split(".")) if (!LABEL.test(label)) return false;
  return true;
}

export type HostResult = { readonly ok: true; readonly host: string | null } | { readonly ok: false; readonly message: string };

/** Lowercase and validate; null/empty means "no host" (matches any host). */
export function normaliseHost(raw: string | null | undefined): HostResult {
  if (raw === null || raw === undefined || raw === "") return { ok: true, host: null };
  const host = raw.toLowerCase();
  const rest = host.startsWith("*.") ? host.slice(2) : host;
  // networking/v1 IngressRule.host: "IP in the Spec of the parent Ingress ... not allowed".
  if (/^[0-9.]+$/.test(rest)) return { ok: false, message: `host ${JSON.stringify(raw)} is an IP address; use a rule without host` };
  if (isDnsName(rest)) return { ok: true, host };
  return {
    ok: false,
    message: `host ${JSON.stringify(raw)} is not a DNS name or "*." followed by one (a wildcard must be the whole first label)`,
  };
}

/** Does TLS host `tlsHost` (exact or `*.x`) cover rule host `host`? */
export function tlsCovers(tlsHost: string, host: string): boolean {
  if (tlsHost === host) return true;
  if (!tlsHost.startsWith("*.") || host.startsWith("*.")) return false;
  const dot = host.indexOf(".");
  return dot > 0 && host.slice(dot + 1) === tlsHost.slice(2);
}
