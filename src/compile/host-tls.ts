// Per-host cipher lists from the ssl-ciphers annotation (docs/design.md, "Per-host cipher
// suites"). ingress-nginx keeps one server block per host and takes its ssl_ciphers from the
// first Ingress of the host, in priority order, that sets it (controller.go createServers:
// "only add SSLCiphers if the server does not have them previously configured"). With
// --host-policy-scope=namespace only the host owner's namespace may set them, as the other
// host-wide policies (host-scope.ts).
import { hostOwner, inHostScope, type HostPolicyScope } from "./host-scope.ts";
import type { IngressPlan } from "./plan.ts";
import type { HostTls } from "./types.ts";
import { wildcardOf } from "../model/cert-names.ts";

const NONE: ReadonlyMap<string, HostTls> = new Map();
/** The listener's list pinned to a host: the same for every host, so one object. */
const PINNED: HostTls = Object.freeze({ ciphers: null });

/**
 * `contributors`: each host key's Ingresses in priority order (served.ts). The rule without a
 * host (`*`, ingress-nginx's default server `_`) has no SNI name of its own and is left out.
 */
export function hostTlsOptions(contributors: ReadonlyMap<string, readonly IngressPlan[]>, scope: HostPolicyScope): ReadonlyMap<string, HostTls> {
  let out: Map<string, HostTls> | null = null;
  for (const [hostKey, plans] of contributors) {
    if (hostKey === "*") continue;
    const owner = hostOwner(plans, scope);
    const first = plans.find((plan) => plan.annotations.denied === null && plan.annotations.policies.sslCiphers.ciphers !== null && inHostScope(plan, owner));
    const ciphers = first?.annotations.policies.sslCiphers.ciphers;
    if (first === undefined || ciphers === undefined || ciphers === null) continue;
    (out ??= new Map()).set(hostKey.toLowerCase(), Object.freeze({ ciphers, ingress: first.key }));
  }
  if (out === null) return NONE;
  // A rule host under a `*.` host with a list of its own is a server of its own in nginx, which
  // picks the server for an SNI name by exact name before wildcards (ngx_http_ssl_servername,
  // server_name) and gives it the ConfigMap's ssl_ciphers. The host is pinned to the listener's
  // list, so the SNI table's wildcard entry (which Bun.serve and node:tls match for any one
  // label) does not serve it the wildcard's.
  for (const hostKey of contributors.keys()) {
    const host = hostKey.toLowerCase();
    const w = wildcardOf(host);
    if (w === null || out.has(host)) continue;
    const wildcard = out.get(w);
    if (wildcard === undefined || wildcard.ciphers === null) continue;
    out.set(host, PINNED);
  }
  return out;
}
