// server-alias across hosts: which alias names are served by which host entry. ingress-nginx
// (controller.go createServers) drops an alias that is the host itself or the host of another
// server, and writes the servers in host name order (getBackendServers sorts them), so when
// two hosts alias one name, nginx serves it from the first ("conflicting server name"). The
// per-host part (the first Ingress of a host that sets aliases) is host-entry.ts's.
import { diagnosticKey, type Diagnostic } from "../model/diagnostic.ts";
import type { HostEntry } from "./host-entry.ts";

export interface AliasState {
  /** Alias name → host key (RouteTable.aliasKeys). */
  readonly keys: ReadonlyMap<string, string>;
  readonly diagnostics: readonly Diagnostic[];
}

export const NO_ALIASES: AliasState = Object.freeze({ keys: new Map<string, string>(), diagnostics: Object.freeze([]) });

/**
 * The aliases of the hosts in `withAliases` (host keys whose entry has some), given every host
 * entry. Names are lowercased DNS names (annotations/hosts.ts), compared with host keys as is.
 */
export function decideAliases(withAliases: Iterable<string>, hosts: ReadonlyMap<string, HostEntry>): AliasState {
  const keys = new Map<string, string>();
  const diagnostics: Diagnostic[] = [];
  for (const hostKey of [...withAliases].sort()) {
    const e = hosts.get(hostKey);
    if (e === undefined || e.aliasPlan === null) continue;
    const { namespace, name } = e.aliasPlan;
    const drop = (message: string) => diagnostics.push({ kind: "Ingress", namespace, name, reason: "AliasConflict", message, severity: "warning" });
    for (const alias of e.aliases) {
      if (alias === hostKey) continue;
      if (hosts.has(alias)) {
        drop(`server-alias ${alias} of host ${hostKey} is ignored: ${alias} is the host of an Ingress rule, which wins`);
        continue;
      }
      const other = keys.get(alias);
      if (other !== undefined) {
        drop(`server-alias ${alias} of host ${hostKey} is ignored: host ${other} has that alias too and comes first (host name order)`);
        continue;
      }
      keys.set(alias, hostKey);
    }
  }
  if (keys.size === 0 && diagnostics.length === 0) return NO_ALIASES;
  return Object.freeze({ keys, diagnostics: Object.freeze(diagnostics) });
}

/** Same aliases (so the table keeps its alias map object, and workers get no alias change). */
export function sameAliases(a: AliasState, b: AliasState): boolean {
  if (a.keys.size !== b.keys.size || a.diagnostics.length !== b.diagnostics.length) return false;
  for (const [k, v] of a.keys) if (b.keys.get(k) !== v) return false;
  return a.diagnostics.every((d, i) => diagnosticKey(d) === diagnosticKey(b.diagnostics[i] as Diagnostic));
}
