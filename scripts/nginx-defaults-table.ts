// Prints the README's table of ingress-nginx's defaults that differ from Portico's, from the
// one table (src/config/nginx-defaults.ts):
//   bun scripts/nginx-defaults-table.ts
// test/config/nginx-defaults.test.ts checks that README.md holds exactly this table.
import { nginxDefaultsTable } from "../test/config/nginx-defaults-table.ts";

process.stdout.write(nginxDefaultsTable());
