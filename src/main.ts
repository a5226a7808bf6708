#!/usr/bin/env bun
// Entry point: parse flags, then serve (as the controller, or as one of its worker processes),
// run the demo, explain, list routes, report a migration, or print help/version. The only
// importer of runtime/ (the composition root). Exit codes: 0 normal, 1 start-up failure (a port
// in use among them), 2 bad flag or value, 3 from `migrate` when an Ingress would change
// (README.md, "Flags").
import { parseArgs } from "./config/parse.ts";
import { helpText } from "./runtime/help.ts";
import { createLogger } from "./log/logger.ts";
import { startupErrorMessage } from "./runtime/errors.ts";
import { explainCli } from "./runtime/explain.ts";
import { runDemo } from "./runtime/demo.ts";
import { routesCli } from "./runtime/routes.ts";
import { migrateCli, migrateToGatewayCli } from "./runtime/migrate.ts";
import { run } from "./runtime/run.ts";
import { versionLine } from "./version.ts";
import { workerIdFromEnv } from "./workers/protocol.ts";
import { runWorker } from "./workers/worker.ts";

async function main(): Promise<number | null> {
  const outcome = parseArgs(process.argv.slice(2), process.env);
  switch (outcome.type) {
    case "help":
      // The help text lives with the composition (runtime/help.ts): it reads the flag table
      // and the annotation registry, which config/ sits below.
      process.stdout.write(`${helpText().replace(/\n$/, "")}\n`);
      return 0;
    case "version":
      process.stdout.write(`${versionLine()}\n`);
      return 0;
    case "error":
      process.stderr.write(`portico: ${outcome.message}\n`);
      return 2;
    case "routes":
      return routesCli(outcome.config, outcome.explicit);
    case "explain":
    {
      const { type: _t, config, explicit, ...request } = outcome;
      return explainCli(config, request, explicit);
    }
    case "migrate":
      if (outcome.toGateway) return migrateToGatewayCli(outcome.config, outcome.output, outcome.toGateway);
      return migrateCli(outcome.config, outcome.output, outcome.nginxConfigMap);
    case "demo":
    case "run": {
      // A worker process (started by a primary with --workers N ≥ 2) serves traffic only.
      const workerId = workerIdFromEnv(process.env);
      if (workerId !== null) {
        await runWorker(outcome.config, workerId);
        return null;
      }
      const log = createLogger({ level: outcome.config.logLevel, format: outcome.config.logFormat });
      try {
        await (outcome.type === "demo" ? runDemo(outcome.config, log) : run(outcome.config, log, outcome.explicit));
      } catch (err) {
        log.error("start-up failed", { err: startupErrorMessage(err, outcome.config) });
        return 1;
      }
      return null; // serving: the process lives until a signal
    }
  }
}

const code = await main();
if (code !== null) process.exit(code);
