// Every stage policy kind, by id: what the compiler may emit and the proxy must run. Derived
// from what policy/kinds.ts exports, so a contract is added there and nowhere else; the proxy's
// runners are paired with these (proxy/policies/registry.ts, and a test holds the two equal).
import { isKindContract, type KindContract } from "./contract.ts";
import * as K from "./kinds.ts";

export const KIND_CONTRACTS: ReadonlyMap<string, KindContract> = contractsOf(Object.values(K));

/** The contracts among `values`, by id; two contracts with one id are a programming error. */
export function contractsOf(values: readonly unknown[]): ReadonlyMap<string, KindContract> {
  const out = new Map<string, KindContract>();
  for (const v of values) {
    if (!isKindContract(v)) continue;
    if (out.has(v.id)) throw new Error(`two policy kinds are named ${JSON.stringify(v.id)}`);
    out.set(v.id, v);
  }
  return out;
}
