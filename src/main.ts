#!/usr/bin/env bun
// Entry point: parse flags, then serve, explain, or print help/version.
// Exit codes: 0 normal, 1 start-up failure, 2 bad flag or value (DESIGN §3).
import { parseArgs } from "./config/parse.ts";
import { createLogger } from "./log/logger.ts";
import { explainCli } from "./runtime/explain.ts";
import { run } from "./runtime/run.ts";
import { versionLine } from "./version.ts";

async function main(): Promise<number | null> {
  const outcome = parseArgs(process.argv.slice(2), process.env);
  switch (outcome.type) {
    case "help":
      process.stdout.write(outcome.text.endsWith("\n") ? outcome.text : `${outcome.text}\n`);
      return 0;
    case "version":
      process.stdout.write(`${versionLine()}\n`);
      return 0;
    case "error":
      process.stderr.write(`portico: ${outcome.message}\n`);
      return 2;
    case "explain":
      return explainCli(outcome.config, { host: outcome.host, path: outcome.path, scheme: outcome.scheme });
    case "run": {
      const log = createLogger({ level: outcome.config.logLevel, format: outcome.config.logFormat });
      try {
        await run(outcome.config, log);
      } catch (err) {
        log.error("start-up failed", { err });
        return 1;
      }
      return null; // serving: the process lives until a signal
    }
  }
}

const code = await main();
if (code !== null) process.exit(code);
