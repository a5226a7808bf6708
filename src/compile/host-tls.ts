// Per-host cipher lists from the ssl-ciphers annotation (docs/design.md, "Per-host cipher
// suites"). ingress-nginx keeps one server block per host and takes its ssl_ciphers from the
// first Ingress of the host, in priority order, that sets it (controller.go createServers:
// "only add SSLCiphers if the server does not have them previously configured"). With
// --host-policy-scope=namespace only the host owner's namespace may set them, as the other
// host-wide policies (host-scope.ts).
import { hostOwner, inHostScope, type HostPolicyScope } from "./host-scope.ts";
import type { IngressPlan } from "./plan.ts";
import type { HostTls } from "./types.ts";

const NONE: ReadonlyMap<string, HostTls> = new Map();

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
  return out ?? NONE;
}
