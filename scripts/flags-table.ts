// Prints the README's flag table from the one flag table (src/config/flags.ts):
//   bun scripts/flags-table.ts
// test/readme.test.ts checks that README.md lists each flag with its default.
import { envName, FLAGS } from "../src/config/flags.ts";

const esc = (s: string) => s.replace(/\|/g, "\\|");
const rows = Object.values(FLAGS).map((f) => {
  const flag = f.metavar ? `--${f.name} ${f.metavar}` : `--${f.name}`;
  return `| \`${esc(flag)}\` | \`${envName(f.name)}\` | ${esc(f.defaultText)} | ${esc(f.help)} |`;
});
process.stdout.write(["| flag | environment | default | meaning |", "|---|---|---|---|", ...rows].join("\n") + "\n");
