// The README's table of ingress-nginx's defaults, rendered from src/config/nginx-defaults.ts.
import { NGINX_DEFAULTS } from "../../src/config/nginx-defaults.ts";

const esc = (s: string) => s.replace(/\|/g, "\\|");

export function nginxDefaultsTable(): string {
  const rows = NGINX_DEFAULTS.map((d) => {
    const flag = d.flagName === null ? "none" : `\`--${d.flagName}\``;
    const served = d.compat === "ingress-nginx" ? `ingress-nginx's${d.flagValue !== undefined && d.flagName !== null ? ` (\`--${d.flagName}=${d.flagValue}\`)` : ""}` : "Portico's";
    return `| \`${esc(d.setting)}\` | ${esc(d.nginx)} | ${flag}: ${esc(d.portico)} | ${served} | ${esc(d.note)} |`;
  });
  return ["| ingress-nginx setting | ingress-nginx default | Portico flag: default | `--ingress-nginx-compat` serves | why |", "|---|---|---|---|---|", ...rows].join("\n") + "\n";
}
