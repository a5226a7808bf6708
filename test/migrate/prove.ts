// The proof of `portico migrate --to gateway-api` for a set of manifests: the real command
// converts the Ingresses, then two real Porticos serve them in front of the same raw backends
// (one per Service, answering its own name), one the Ingresses (with --ingress-nginx-compat),
// the other only the Gateway API objects the command wrote, and the same sample of requests is
// asked of both: every host and path as written (and next to it: a deeper path, the path with
// a letter more, in upper case), on HTTPS too for a TLS host, each canary header and cookie,
// CORS preflights and simple requests with an allowed and a refused Origin. An answer is its
// status, Location, the response fields (all but the per-request ones) and what the backend
// received (which backend, the request line and fields). Every request whose answer differs
// is reported. Explain cannot be asked instead: it assumes a GET without headers, so it says
// nothing about a canary header or a CORS preflight (compile/explain-types.ts ExplainRequest).
//
// Used by test/migrate/to-gateway.test.ts, and run by hand to write the report of a set:
//   bun test/migrate/prove.ts [--class NAME --controller-class S] [--out FILE.json] MANIFESTS...
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dump, loadAll } from "js-yaml";
import type { ConversionNote } from "../../src/compile/to-gateway.ts";
import { startPortico, type Portico } from "../e2e/harness.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";

const ROOT = join(import.meta.dir, "..", "..");
const CMD = process.env.PORTICO_BIN ? [process.env.PORTICO_BIN] : [process.execPath, join(ROOT, "src", "main.ts")];
const NOTE = "# portico-note: ";
const N = "nginx.ingress.kubernetes.io/";
/** Bounds: a set is a test fixture or an exported namespace, not a whole cluster. */
const MAX_REQUESTS = 3000;
const MAX_SERVICES = 200;

type Obj = Record<string, unknown> & { kind?: string; apiVersion?: string; metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> } };

export interface ProofRequest {
  readonly scheme: "http" | "https";
  readonly host: string;
  readonly path: string;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Why it is in the sample (the Ingress and what it exercises). */
  readonly why: string;
}

export interface ProofAnswer {
  readonly status: number;
  readonly location: string | null;
  /** Response fields, lower-cased `name: value`, sorted; without the per-request ones. */
  readonly fields: readonly string[];
  /** What a backend received, or null when none was asked. */
  readonly received: { readonly backend: string; readonly line: string; readonly fields: readonly string[] } | null;
}

export interface ProofDifference {
  readonly request: ProofRequest;
  readonly ingress: ProofAnswer;
  readonly gateway: ProofAnswer;
}

export interface ProofReport {
  readonly manifests: readonly string[];
  /** The command run on them (the class flags given). */
  readonly command: string;
  readonly exitCode: number;
  /** Objects written, by kind. */
  readonly objects: Readonly<Record<string, number>>;
  /** Notes by carriedAs. */
  readonly notes: Readonly<Record<string, number>>;
  readonly notesList: readonly ConversionNote[];
  /** The objects the command wrote. */
  readonly objectsList: readonly Obj[];
  readonly asked: number;
  readonly same: number;
  readonly differing: readonly ProofDifference[];
}

/** Every YAML document of the files (a directory: its .yaml/.yml files, sorted). */
export function readManifests(paths: readonly string[]): Obj[] {
  const out: Obj[] = [];
  for (const p of paths) {
    const files = statSync(p).isDirectory() ? readdirSync(p).filter((f) => /\.ya?ml$/i.test(f)).sort().map((f) => join(p, f)) : [p];
    for (const f of files) for (const d of loadAll(readFileSync(f, "utf8"))) if (d !== null && typeof d === "object") out.push(d as Obj);
  }
  return out;
}

/** A literal request path for a path as written: the text before its first regex character. */
function literalOf(path: string): string {
  const lit = /^[^.*+?()[\]{}|\\$^]*/.exec(path)?.[0] ?? "";
  return lit === "" ? "/" : lit;
}

/**
 * A path a regex path matches, for the common forms (`[0-9]+`, `\\d+`, `.*`, `[^/]+`, `(/|$)`,
 * groups, `\\.`), or null when something else is left (alternatives, classes of other kinds).
 */
export function instanceOf(path: string): string | null {
  let t = path.replace(/^\^/, "").replace(/\$$/, "");
  t = t.replaceAll("(/|$)", "/").replace(/\(\?:/g, "(");
  t = t.replace(/(\\d|\[0-9\])[+*]?/g, "1").replace(/\[\^\/\][+*]/g, "x").replace(/\.[+*]/g, "x").replace(/\[([A-Za-z0-9])[^\]]*\][+*]?/g, "$1");
  t = t.replaceAll("\\.", "\u0000").replaceAll("\\-", "-").replace(/[()]/g, "");
  if (/[.*+?[\]{}|\\$^]/.test(t) || !t.startsWith("/")) return null;
  return t.replaceAll("\u0000", ".");
}

const hostFor = (host: string | undefined): string => (host === undefined || host === "" ? "any-host.test" : host.startsWith("*.") ? `w${host.slice(1)}` : host);

/** The sample: built from the Ingresses as written, so it does not lean on either compile. */
export function sampleOf(docs: readonly Obj[]): ProofRequest[] {
  const out = new Map<string, ProofRequest>();
  const add = (r: ProofRequest) => {
    const k = JSON.stringify([r.scheme, r.host, r.path, r.method, r.headers]);
    if (!out.has(k) && out.size < MAX_REQUESTS) out.set(k, r);
  };
  for (const ing of docs.filter((d) => d.kind === "Ingress")) {
    const key = `${ing.metadata?.namespace ?? "default"}/${ing.metadata?.name}`;
    const ann = ing.metadata?.annotations ?? {};
    const spec = (ing.spec ?? {}) as { tls?: { hosts?: string[] }[]; rules?: { host?: string; http?: { paths?: { path?: string }[] } }[]; defaultBackend?: unknown };
    const tlsHosts = new Set((spec.tls ?? []).flatMap((t) => t.hosts ?? []));
    const rules = spec.rules ?? [];
    const targets: { host: string; tls: boolean; paths: string[] }[] = rules.map((r) => ({
      host: hostFor(r.host),
      // A `*.` TLS host covers one more label.
      tls: r.host !== undefined && (tlsHosts.has(r.host) || (r.host.includes(".") && tlsHosts.has(`*${r.host.slice(r.host.indexOf("."))}`))),
      paths: (r.http?.paths ?? []).map((p) => p.path ?? "/"),
    }));
    if (targets.length === 0 && spec.defaultBackend !== undefined) targets.push({ host: "any-host.test", tls: false, paths: ["/"] });
    const variants: { headers: Record<string, string>; method: string; why: string }[] = [{ headers: {}, method: "GET", why: "" }];
    if (ann[`${N}canary`] === "true") {
      const h = ann[`${N}canary-by-header`];
      if (h !== undefined) {
        for (const v of ["always", "never", "Always"]) variants.push({ headers: { [h]: v }, method: "GET", why: `canary-by-header ${h}: ${v}` });
        const hv = ann[`${N}canary-by-header-value`];
        if (hv !== undefined) variants.push({ headers: { [h]: hv }, method: "GET", why: `canary-by-header-value ${hv}` });
      }
      const c = ann[`${N}canary-by-cookie`];
      if (c !== undefined) for (const v of ["always", "never"]) variants.push({ headers: { cookie: `${c}=${v}` }, method: "GET", why: `canary-by-cookie ${c}=${v}` });
    }
    if (ann[`${N}enable-cors`] === "true") {
      const listed = (ann[`${N}cors-allow-origin`] ?? "*").split(",").map((o) => o.trim()).find((o) => /^https?:\/\//.test(o));
      const allowed = listed === undefined ? "https://origin.test" : listed.replace("://*.", "://x.");
      for (const [origin, what] of [[allowed, "an allowed Origin"], ["https://not-allowed.test", "an Origin not in the list"]] as const) {
        variants.push({ method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "Content-Type" }, why: `CORS preflight from ${what}` });
        variants.push({ method: "GET", headers: { origin }, why: `CORS simple request from ${what}` });
      }
    }
    for (const t of targets) {
      for (const raw of t.paths) {
        const lit = literalOf(raw);
        const paths = [lit, lit.endsWith("/") ? `${lit}x` : `${lit}/x`];
        const inst = lit === raw ? null : instanceOf(raw);
        if (inst !== null) paths.push(inst, `${inst}/x`, inst.toUpperCase());
        if (lit !== "/") paths.push(`${lit.replace(/\/$/, "")}x`);
        if (/[a-z]/.test(lit)) paths.push(lit.toUpperCase());
        for (const scheme of t.tls ? (["http", "https"] as const) : (["http"] as const)) {
          for (const path of paths) {
            for (const v of variants) {
              // The variants of an annotation on the path as written only (they do not depend on the path).
              if (v.why !== "" && path !== lit) continue;
              add({ scheme, host: t.host, path, method: v.method, headers: v.headers, why: `${key} ${JSON.stringify(raw)}${v.why === "" ? "" : `, ${v.why}`}` });
            }
          }
        }
      }
    }
  }
  return [...out.values()];
}

/** Per-request or per-process fields: not part of an answer. */
const NOISE = new Set(["date", "x-request-id", "content-length", "connection", "keep-alive", "transfer-encoding"]);
const NOISE_RECEIVED = new Set(["x-request-id", "content-length", "connection"]);

async function convert(dir: string, classFlags: readonly string[]): Promise<{ code: number; yaml: string; notes: ConversionNote[]; objects: Obj[] }> {
  const p = Bun.spawn([...CMD, "migrate", "--to", "gateway-api", "--manifests", dir, ...classFlags], { stdout: "pipe", stderr: "pipe", cwd: ROOT });
  const [yaml, , code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const notes = yaml.split("\n").filter((l) => l.startsWith(NOTE)).map((l) => JSON.parse(l.slice(NOTE.length)) as ConversionNote);
  return { code, yaml, notes, objects: loadAll(yaml).filter((d) => d !== null) as Obj[] };
}

/**
 * Converts and serves `paths` side by side, asks the sample and returns the report. The
 * EndpointSlices of the set are replaced by one per Service pointing at a raw backend, and each
 * TLS Secret an Ingress names by a certificate minted for its hosts (the set's own may be fake).
 */
export async function prove(paths: readonly string[], classFlags: readonly string[] = [], extraSample: readonly ProofRequest[] = []): Promise<ProofReport> {
  const docs = readManifests(paths);
  const dir = mkdtempSync(join(tmpdir(), "portico-prove-"));
  const backends = new Map<string, RawBackend & { name: string }>();
  let ing: Portico | undefined;
  let gw: Portico | undefined;
  try {
    const ingressDocs: Obj[] = [];
    const shared: Obj[] = [];
    const tlsNames = new Map<string, Set<string>>();
    for (const d of docs) {
      if (d.kind !== "Ingress") continue;
      const ns = d.metadata?.namespace ?? "default";
      for (const t of ((d.spec ?? {}) as { tls?: { hosts?: string[]; secretName?: string }[] }).tls ?? []) {
        if (t.secretName === undefined) continue;
        const k = `${ns}/${t.secretName}`;
        const s = tlsNames.get(k) ?? new Set<string>();
        for (const h of t.hosts ?? []) s.add(h);
        tlsNames.set(k, s);
      }
    }
    for (const d of docs) {
      const kind = d.kind ?? "";
      if (kind === "Ingress" || kind === "IngressClass") ingressDocs.push(d);
      else if (kind === "Service") shared.push(d);
      else if (kind === "Secret" && !tlsNames.has(`${d.metadata?.namespace ?? "default"}/${d.metadata?.name}`)) shared.push(d);
      // EndpointSlices are replaced below; Gateway API objects of the set and other kinds are left out.
    }
    const services = shared.filter((d) => d.kind === "Service").slice(0, MAX_SERVICES);
    for (const s of services) {
      const ns = s.metadata?.namespace ?? "default";
      const name = `${ns}/${s.metadata?.name}`;
      const spec = (s.spec ?? {}) as { type?: string; ports?: { name?: string; port: number }[] };
      if (spec.type === "ExternalName") continue;
      const b = await namedBackend(name);
      backends.set(name, b);
      shared.push({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: { name: `${s.metadata?.name}-proof`, namespace: ns, labels: { "kubernetes.io/service-name": s.metadata?.name } } as Obj["metadata"],
        addressType: "IPv4",
        ports: (spec.ports ?? []).map((p) => ({ ...(p.name !== undefined ? { name: p.name } : {}), port: b.port })),
        endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
      });
    }
    for (const [k, hosts] of tlsNames) {
      const [namespace, name] = k.split("/") as [string, string];
      const sans = [...hosts].filter((h) => h !== "");
      const c = createCertificate({ subjectCN: sans[0] ?? "proof.test", sans: sans.length > 0 ? sans : ["proof.test"] });
      shared.push({ apiVersion: "v1", kind: "Secret", type: "kubernetes.io/tls", metadata: { name, namespace }, data: { "tls.crt": Buffer.from(c.certPem).toString("base64"), "tls.key": Buffer.from(c.keyPem).toString("base64") } });
    }
    const write = (d: string, objs: readonly Obj[]) => {
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, "objects.yaml"), objs.map((o) => `---\n${dump(o, { lineWidth: -1, noRefs: true })}`).join(""));
    };
    const ingDir = join(dir, "ingress");
    const gwDir = join(dir, "gateway");
    write(ingDir, [...shared, ...ingressDocs]);
    const conv = await convert(ingDir, classFlags);
    write(gwDir, shared);
    writeFileSync(join(gwDir, "gateway.yaml"), conv.yaml);
    [ing, gw] = await Promise.all([
      startPortico(["--manifests", ingDir, "--ingress-nginx-compat", ...classFlags, "--access-log", "off"]),
      // The same flags, so that only the objects differ (the defaults --ingress-nginx-compat
      // serves, its 404 page...); the class flags do not apply to Gateway API objects.
      startPortico(["--manifests", gwDir, "--ingress-nginx-compat", "--access-log", "off"]),
    ]);
    const sample = [...sampleOf(ingressDocs), ...extraSample];
    const ask = async (p: Portico, r: ProofRequest): Promise<ProofAnswer> => {
      const before = new Map([...backends].map(([k, b]) => [k, b.hits.length]));
      const base = r.scheme === "https" ? p.https : p.http;
      const ports = (s: string) => s.replaceAll(`:${p.ports.https}`, ":TLSPORT").replaceAll(`:${p.ports.http}`, ":PORT").replaceAll(`=${p.ports.https}`, "=TLSPORT").replaceAll(`=${p.ports.http}`, "=PORT");
      let res: Response;
      try {
        res = await fetch(`${base}${r.path}`, {
          method: r.method,
          headers: { host: r.host, connection: "close", ...r.headers },
          redirect: "manual",
          tls: { rejectUnauthorized: false, serverName: r.host },
        } as RequestInit);
      } catch (e) {
        // A path or host the client cannot send (a set's deliberately bad input): the same for both.
        return { status: 0, location: null, fields: [`client: ${(e as Error).message}`], received: null };
      }
      await res.arrayBuffer();
      const fields: string[] = [];
      res.headers.forEach((value, name) => {
        if (!NOISE.has(name.toLowerCase())) fields.push(ports(`${name.toLowerCase()}: ${value}`));
      });
      let received: ProofAnswer["received"] = null;
      for (const [k, b] of backends) {
        if (b.hits.length > (before.get(k) ?? 0)) {
          const head = b.hits.at(-1)!.head.split("\r\n");
          const kept = head.slice(1).map((l) => {
            const i = l.indexOf(":");
            return `${l.slice(0, i).toLowerCase()}:${l.slice(i + 1)}`;
          }).filter((l) => !NOISE_RECEIVED.has(l.slice(0, l.indexOf(":"))));
          // X-Forwarded-Port is each Portico's own listening port.
          const own = String(r.scheme === "https" ? p.ports.https : p.ports.http);
          received = { backend: k, line: head[0]!, fields: kept.map((l) => (l === `x-forwarded-port: ${own}` ? "x-forwarded-port: PORT" : ports(l))).sort() };
        }
      }
      return { status: res.status, location: res.headers.get("location") === null ? null : ports(res.headers.get("location")!), fields: fields.sort(), received };
    };
    // Both have read their objects once the first host answers the same from each (or after the wait).
    const first = sample[0];
    if (first !== undefined) {
      await eventually(async () => {
        const [a, b] = [await ask(ing!, first), await ask(gw!, first)];
        return a.status !== 404 || b.status !== 404 ? a.status === b.status : false;
      }, 15_000, "both Porticos serve the set").catch(() => undefined);
    }
    const differing: ProofDifference[] = [];
    for (const r of sample) {
      const a = await ask(ing, r);
      const b = await ask(gw, r);
      if (JSON.stringify(a) !== JSON.stringify(b)) differing.push({ request: r, ingress: a, gateway: b });
    }
    const count = <T,>(xs: readonly T[], f: (x: T) => string) => {
      const o: Record<string, number> = {};
      for (const x of xs) o[f(x)] = (o[f(x)] ?? 0) + 1;
      return o;
    };
    return {
      manifests: paths,
      command: ["portico", "migrate", "--to", "gateway-api", "--manifests", "<set>", ...classFlags].join(" "),
      exitCode: conv.code,
      objects: count(conv.objects, (o) => o.kind ?? "?"),
      // A line for an object that could not be read has no carriedAs (runtime/migrate.ts gatewayYaml).
      notes: count(conv.notes, (n) => n.carriedAs ?? "not read"),
      notesList: conv.notes,
      objectsList: conv.objects,
      asked: sample.length,
      same: sample.length - differing.length,
      differing,
    };
  } finally {
    await Promise.all([ing?.stop("SIGKILL"), gw?.stop("SIGKILL")]);
    for (const b of backends.values()) await b.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const classFlags: string[] = [];
  let out: string | null = null;
  const paths: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--class") classFlags.push("--ingress-class", args[++i]!);
    else if (a === "--controller-class") classFlags.push("--controller-class", args[++i]!);
    else if (a === "--out") out = args[++i]!;
    else paths.push(a);
  }
  const r = await prove(paths, classFlags);
  const text = `${JSON.stringify(r, null, 2)}\n`;
  if (out !== null) writeFileSync(out, text);
  else process.stdout.write(text);
  process.exit(0);
}
