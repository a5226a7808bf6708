// Who owns a (host, path, type) triple: the first claimant in priority order (DESIGN §4:
// oldest creationTimestamp, then namespace/name). Losers get a diagnostic naming the winner.
import type { Ingress } from "../model/schemas.ts";
import type { PathType } from "../table/types.ts";

export interface Claim {
  readonly ingress: Ingress;
  readonly ruleIndex: number;
  readonly pathIndex: number;
}

export type ClaimOutcome = { readonly won: true } | { readonly won: false; readonly winner: Claim; readonly sameIngress: boolean };

export class ClaimRegistry {
  /** host (or "*") → "E/path" | "P/path" → first claim. Nested to keep keys short. */
  readonly #claims = new Map<string, Map<string, Claim>>();

  claim(host: string | null, path: string, type: PathType, claim: Claim): ClaimOutcome {
    const h = host ?? "*";
    let paths = this.#claims.get(h);
    if (paths === undefined) this.#claims.set(h, (paths = new Map()));
    const key = type === "Exact" ? `E${path}` : `P${path}`;
    const winner = paths.get(key);
    if (winner === undefined) {
      paths.set(key, claim);
      return WON;
    }
    return { won: false, winner, sameIngress: winner.ingress === claim.ingress };
  }
}

const WON: ClaimOutcome = { won: true };
