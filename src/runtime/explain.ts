// Explain a request: on the admin port against the live snapshot (/debug/explain), and as a
// CLI twin (`portico explain --manifests F --host H --path P`) with no server running.
import { explain, explainSteps, type ExplainRequest, type ExplainResult } from "../compile/explain.ts";
import type { Config } from "../config/types.ts";
import { ManifestSource } from "../files/manifests.ts";
import { createLogger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { RejectedRequest } from "../request/rejected.ts";
import { Store } from "../store/store.ts";
import type { Controller } from "./controller.ts";
import { configWithNginxConfigMap } from "./nginx-settings.ts";

/** The answer for a request the proxy refuses with 400 before any routing. */
export interface ExplainRefused {
  readonly outcome: "400";
  readonly reason: string;
}

/** A question explain cannot answer: a port or Gateway without a table of its own, a bad method. */
export interface ExplainError {
  readonly error: string;
}

/** A request the proxy would refuse is answered as such rather than as an error. */
function refusal(err: unknown): ExplainRefused | ExplainError {
  // The message names the part (host or path), never the value.
  if (err instanceof RejectedRequest) return { outcome: "400", reason: err.message };
  // compile/explain.ts: the port or Gateway asked has no table, or an input is beyond its limits.
  if (err instanceof RangeError) return { error: err.message };
  throw err;
}

export async function explainLive(controller: Controller, config: Config, q: ExplainRequest): Promise<ExplainResult | ExplainRefused | ExplainError> {
  // The snapshot of the live table, so the answer describes what is being served right now.
  // The controller's compiler compiled it: explain reads that compile rather than redoing it
  // (before the first table, or after a failed compile reset the compiler, explain compiles).
  const steps = explainSteps(controller.last?.snapshot ?? controller.store.snapshot(), config, q, controller.compiler);
  try {
    for (;;) {
      const r = steps.next();
      if (r.done) return r.value;
      // Between steps, let the event loop serve what is waiting (/healthz, traffic, the watch).
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } catch (err) {
    return refusal(err);
  }
}

/** Prints the explanation as JSON on stdout; returns the exit code. */
export async function explainCli(flags: Config, q: ExplainRequest, explicit: ReadonlySet<keyof Config> = new Set()): Promise<number> {
  // Logs go to stderr so stdout stays pure JSON for jq and friends.
  const log = createLogger({ level: "warn", format: flags.logFormat, write: (line) => process.stderr.write(`${line}\n`) });
  if (!flags.manifests) {
    log.error("explain needs --manifests PATH");
    return 2;
  }
  // --nginx-configmap's keys act as their flags, as when serving: the answer is the one served.
  let config: Config;
  try {
    config = await configWithNginxConfigMap(flags, explicit, log);
  } catch (err) {
    log.error("cannot read the ConfigMap", { err });
    return 1;
  }
  const store = new Store();
  const byFile = new Map<string, readonly Diagnostic[]>();
  const source = new ManifestSource({ path: flags.manifests, log, onDiagnostics: (owner, ds) => void byFile.set(owner, ds) });
  try {
    await source.start(store);
  } catch (err) {
    log.error("cannot read manifests", { err });
    return 1;
  } finally {
    await source.stop();
  }
  let result: ExplainResult | ExplainRefused | ExplainError;
  try {
    result = explain(store.snapshot(), config, q);
  } catch (err) {
    if (err instanceof RangeError) {
      // A host or path beyond the limits explain accepts (compile/explain-types.ts).
      log.error("cannot explain", { err });
      return 2;
    }
    result = refusal(err);
  }
  const invalid = [...byFile.values()].flat();
  process.stdout.write(`${JSON.stringify({ ...result, invalidObjects: invalid }, null, 2)}\n`);
  return 0;
}
