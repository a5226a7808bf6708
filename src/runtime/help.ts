// `portico --help`, generated from the flag table so every flag, its default and env twin appear,
// and from the annotation registry (src/annotations/registry.ts) for the annotations.
import { helpLines as annotationHelpLines } from "../annotations/docs.ts";
import { EXPLAIN_FLAGS, FLAGS, MIGRATE_FLAGS, envName } from "../config/flags.ts";

function entry(name: string, metavar: string | null, help: string, defaultText: string, env: string | null): string {
  const head = `  --${name}${metavar ? ` ${metavar}` : ""}`;
  const tail = `default: ${defaultText}${env ? `; env ${env}` : ""}`;
  return `${head}\n      ${help} (${tail})`;
}

export function helpText(): string {
  const lines = [
    "Usage:",
    "  portico [flags]",
    "  portico explain --manifests PATH --host HOST [--path PATH] [--scheme http|https] [flags]",
    "  portico routes (--manifests PATH | [--kubeconfig PATH] [--context NAME]) [flags]",
    "  portico demo [flags]",
    "  portico migrate [--manifests PATH | --kubeconfig PATH] [--output text|json] [flags]",
    "  portico migrate --to gateway-api [--gateway-name N] [--gateway-namespace NS] [--manifests PATH | --kubeconfig PATH] [--output text|json] [--prove]",
    "",
    "Portico is a Kubernetes ingress controller: it watches Ingress, IngressClass, Service,",
    "EndpointSlice and Secret objects (or YAML files with --manifests) and serves HTTP and HTTPS.",
    "",
    "Flags take `--flag value` or `--flag=value`; switches take `--flag` or `--flag=false`.",
    "Each flag also reads PORTICO_<FLAG_IN_UPPER_SNAKE> from the environment; the flag wins.",
    "",
    "Flags:",
  ];
  for (const spec of Object.values(FLAGS)) {
    lines.push(entry(spec.name, spec.metavar, spec.help, spec.defaultText, envName(spec.name)));
  }
  lines.push("  --help, -h\n      print this text and exit", "  --version\n      print the version and exit");
  lines.push("", "explain: print how a request would be routed, from --manifests, then exit.");
  for (const spec of Object.values(EXPLAIN_FLAGS)) {
    lines.push(entry(spec.name, spec.metavar, spec.help, spec.defaultText, null));
  }
  lines.push(
    "",
    "routes: print the route table (host, path, type, backend, endpoints, TLS) that --manifests",
    "or the cluster compiles to, then exit.",
    "demo: start four demo backends on 127.0.0.1 and serve the built-in demo manifests from a",
    "temporary folder (printed at start; edit it while the demo runs). Defaults: --bind 127.0.0.1,",
    "--log-format text, --shutdown-delay 0s.",
    "migrate: for each Ingress ingress-nginx takes (its class rules, as with --ingress-nginx-compat),",
    "print what changes when Portico serves it: each annotation served the same, with a stated",
    "difference, or not served; snippets and what replaces them; then a summary. Reads --manifests",
    "or the cluster (one list of each kind Portico reads), and --nginx-configmap, then exits:",
    "0 when every Ingress is unchanged, 3 when one would change, 1 when the objects cannot be read.",
  );
  for (const spec of Object.values(MIGRATE_FLAGS)) {
    lines.push(entry(spec.name, spec.metavar, spec.help, spec.defaultText, null));
  }
  lines.push("", ...annotationHelpLines());
  lines.push("", "Exit status: 0 on success, 1 when start-up fails, 2 on a bad flag or value (migrate: 3 when an Ingress would change).");
  return `${lines.join("\n")}\n`;
}
