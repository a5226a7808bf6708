// Explain a request: on the admin port against the live snapshot (/debug/explain), and as a
// CLI twin (`portico explain --manifests F --host H --path P`) with no server running.
import { explain, type ExplainRequest, type ExplainResult } from "../compile/explain.ts";
import type { Config } from "../config/types.ts";
import { ManifestSource } from "../files/manifests.ts";
import { createLogger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { RejectedRequest } from "../request/rejected.ts";
import { Store } from "../store/store.ts";
import type { Controller } from "./controller.ts";

/** The answer for a request the proxy refuses with 400 before any routing. */
export interface ExplainRefused {
  readonly outcome: "400";
  readonly reason: string;
}

/** explain(), with a request the proxy would refuse answered as such rather than as an error. */
function explainOrRefuse(snapshot: Parameters<typeof explain>[0], config: Config, q: ExplainRequest): ExplainResult | ExplainRefused {
  try {
    return explain(snapshot, config, q);
  } catch (err) {
    // The message names the part (host or path), never the value.
    if (err instanceof RejectedRequest) return { outcome: "400", reason: err.message };
    throw err;
  }
}

export function explainLive(controller: Controller, config: Config, q: ExplainRequest): ExplainResult | ExplainRefused {
  // The snapshot of the live table, so the answer describes what is being served right now.
  return explainOrRefuse(controller.last?.snapshot ?? controller.store.snapshot(), config, q);
}

/** Prints the explanation as JSON on stdout; returns the exit code. */
export async function explainCli(config: Config, q: ExplainRequest): Promise<number> {
  // Logs go to stderr so stdout stays pure JSON for jq and friends.
  const log = createLogger({ level: "warn", format: config.logFormat, write: (line) => process.stderr.write(`${line}\n`) });
  if (!config.manifests) {
    log.error("explain needs --manifests PATH");
    return 2;
  }
  const store = new Store();
  const invalid: Diagnostic[] = [];
  const source = new ManifestSource({ path: config.manifests, log, onDiagnostic: (d) => invalid.push(d) });
  try {
    await source.start(store);
  } catch (err) {
    log.error("cannot read manifests", { err });
    return 1;
  } finally {
    await source.stop();
  }
  const result = explainOrRefuse(store.snapshot(), config, q);
  process.stdout.write(`${JSON.stringify({ ...result, invalidObjects: invalid }, null, 2)}\n`);
  return 0;
}
