// `portico migrate --to gateway-api --prove`: the conversion proved by serving both forms
// (docs/design.md, "Converting to Gateway API"). Two Portico processes of this same executable
// serve the set on loopback ports, in front of the same raw backends this process starts (one
// per Service, answering its own name and recording the request line and fields it got): one
// the Ingresses (--ingress-nginx-compat), the other only the Gateway API objects the
// conversion wrote. Both are asked the same sample of requests, built from the Ingresses as
// written: every host and path (and next to it a deeper path, the path with a letter more, in
// upper case), on HTTPS too for a TLS host, each canary header and cookie, CORS preflights and
// simple requests with an allowed and a refused Origin. An answer is its status, Location, the
// response fields (all but the per-request ones) and what the backend received. Every request
// whose answer differs is reported. Explain cannot be asked instead: it assumes a GET without
// header fields (compile/explain-types.ts), so it says nothing about a canary header or a
// CORS preflight.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket, Subprocess, TCPSocketListener } from "bun";
import { dump } from "js-yaml";
import type { ConversionNote } from "../compile/to-gateway.ts";
import { manifestObjects } from "../files/manifests.ts";
import { createSelfSignedCertificate } from "../tls/x509.ts";
import { isCompiled } from "../workers/argv.ts";

const N = "nginx.ingress.kubernetes.io/";
/** Bounds: a set is an exported namespace or a fixture, not a whole cluster. */
const MAX_REQUESTS = 3000;
const MAX_SERVICES = 200;
/** How long each Portico has to become ready and to serve the set. */
const START_TIMEOUT_MS = 30_000;
/** A backend reads a request head up to this size (the sample's are small). */
const MAX_HEAD = 64 * 1024;

export type Obj = Record<string, unknown> & { kind?: string; apiVersion?: string; metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> } };

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
  /** The notes of the Ingresses with a rule for the request's host: where a stated difference is said. */
  readonly notes: readonly ConversionNote[];
}

export interface Proof {
  readonly asked: number;
  readonly same: number;
  readonly differ: readonly ProofDifference[];
}

/** Every object of the set, as written (files/manifests.ts, the source's files and rules). Throws on a file that cannot be read. */
async function readManifests(path: string): Promise<Obj[]> {
  const out: Obj[] = [];
  for await (const f of manifestObjects(path)) {
    if (!f.ok) throw new Error(`${f.file}: ${f.message}`);
    out.push(...(f.objects as Obj[]));
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
 * Only fixed replacements are applied to the user's text; it is never compiled as a regex.
 */
function instanceOf(path: string): string | null {
  let t = path.replace(/^\^/, "").replace(/\$$/, "");
  t = t.replaceAll("(/|$)", "/").replace(/\(\?:/g, "(");
  t = t.replace(/(\\d|\[0-9\])[+*]?/g, "1").replace(/\[\^\/\][+*]/g, "x").replace(/\.[+*]/g, "x").replace(/\[([A-Za-z0-9])[^\]]*\][+*]?/g, "$1");
  t = t.replaceAll("\\.", "\u0000").replaceAll("\\-", "-").replace(/[()]/g, "");
  if (/[.*+?[\]{}|\\$^]/.test(t) || !t.startsWith("/")) return null;
  return t.replaceAll("\u0000", ".");
}

const hostFor = (host: string | undefined): string => (host === undefined || host === "" ? "any-host.test" : host.startsWith("*.") ? `w${host.slice(1)}` : host);
const keyOf = (o: Obj) => `${o.metadata?.namespace ?? "default"}/${o.metadata?.name}`;

type IngressSpec = { tls?: { hosts?: string[]; secretName?: string }[]; rules?: { host?: string; http?: { paths?: { path?: string }[] } }[]; defaultBackend?: unknown };

/** The sample: built from the Ingresses as written, so it does not lean on either compile. */
function sampleOf(docs: readonly Obj[]): ProofRequest[] {
  const out = new Map<string, ProofRequest>();
  const add = (r: ProofRequest) => {
    const k = JSON.stringify([r.scheme, r.host, r.path, r.method, r.headers]);
    if (!out.has(k) && out.size < MAX_REQUESTS) out.set(k, r);
  };
  const aliases = new Map<string, Set<string>>();
  for (const ing of docs.filter((d) => d.kind === "Ingress")) {
    const names = (ing.metadata?.annotations?.[`${N}server-alias`] ?? "").split(",").map((x) => x.trim().toLowerCase()).filter((x) => /^[a-z0-9.-]+$/.test(x));
    for (const r of ((ing.spec ?? {}) as IngressSpec).rules ?? []) {
      if (r.host === undefined || names.length === 0) continue;
      const set = aliases.get(r.host) ?? new Set<string>();
      for (const x of names) set.add(x);
      aliases.set(r.host, set);
    }
  }
  for (const ing of docs.filter((d) => d.kind === "Ingress")) {
    const key = keyOf(ing);
    const ann = ing.metadata?.annotations ?? {};
    const spec = (ing.spec ?? {}) as IngressSpec;
    const tlsHosts = new Set((spec.tls ?? []).flatMap((t) => t.hosts ?? []));
    const targets: { host: string; tls: boolean; paths: string[] }[] = (spec.rules ?? []).map((r) => ({
      host: hostFor(r.host),
      // A `*.` TLS host covers one more label.
      tls: r.host !== undefined && (tlsHosts.has(r.host) || (r.host.includes(".") && tlsHosts.has(`*${r.host.slice(r.host.indexOf("."))}`))),
      paths: (r.http?.paths ?? []).map((p) => p.path ?? "/"),
    }));
    if (targets.length === 0 && spec.defaultBackend !== undefined) targets.push({ host: "any-host.test", tls: false, paths: ["/"] });
    // Names the Ingress serves besides its rule hosts, as written: a server-alias of its host
    // (set on any Ingress of the host: an alias names the whole server) and
    // from-to-www-redirect's other name (`www.X` ↔ `X`, which redirects).
    const named = targets.filter((t) => t.host !== "any-host.test" && !t.host.startsWith("w."));
    for (const t of [...named]) for (const alias of aliases.get(t.host) ?? []) targets.push({ host: alias, tls: false, paths: t.paths });
    if (ann[`${N}from-to-www-redirect`] === "true") {
      for (const t of named) targets.push({ host: t.host.startsWith("www.") ? t.host.slice(4) : `www.${t.host}`, tls: false, paths: ["/", "/x/"] });
    }
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

/**
 * The command that runs this Portico again. A compiled executable's entry lives in its embedded
 * file system (`/$bunfs/…`, `B:/~BUN/…` on Windows) and process.execPath is the executable
 * itself; run from sources, process.execPath is bun and the entry script comes after it.
 */
function selfCommand(): string[] {
  return isCompiled(Bun.main) ? [process.execPath] : [process.execPath, Bun.main];
}

interface Backend {
  readonly name: string;
  readonly port: number;
  /** Request heads received, in order. */
  readonly heads: string[];
  stop(): void;
}

/** A raw loopback backend: answers each request with its name and closes (RFC 9112 §9.6). */
function startBackend(name: string): Backend {
  const heads: string[] = [];
  const bufs = new WeakMap<Socket<undefined>, string>();
  const body = Buffer.from(name, "utf8");
  const server: TCPSocketListener<undefined> = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(s, chunk) {
        const buf = (bufs.get(s) ?? "") + Buffer.from(chunk).toString("latin1");
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) {
          if (buf.length > MAX_HEAD) s.end();
          else bufs.set(s, buf);
          return;
        }
        bufs.delete(s);
        heads.push(buf.slice(0, end));
        s.end(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${name}`);
      },
    },
  });
  return { name, port: server.port, heads, stop: () => server.stop(true) };
}

/**
 * `n` distinct ports the OS just handed out, all held until the last is taken (so none repeats)
 * and then closed: the child binds them a moment later. Another process may take one in
 * between; startChild then tries again with others.
 */
function freePorts(n: number): number[] {
  const held = Array.from({ length: n }, () => Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }));
  const ports = held.map((s) => s.port);
  for (const s of held) s.stop(true);
  return ports;
}

interface Child {
  readonly proc: Subprocess<"ignore", "ignore", "pipe">;
  readonly ports: { http: number; https: number; admin: number };
  /** The last of its log output, for an error. */
  readonly tail: () => string;
  /** Resolves once its log output is read to the end. */
  readonly drained: Promise<void>;
}

/**
 * Starts Portico on loopback ports serving `dir`. The environment's PORTICO_* variables are left
 * out so that only the flags given here (and the fixed loopback ports) apply. It has an IPC
 * channel from this process, so it stops when this process is gone, however it ended.
 */
function startChild(dir: string, flags: readonly string[]): Child {
  const [http, https, admin] = freePorts(3) as [number, number, number];
  const ports = { http, https, admin };
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("PORTICO_")) env[k] = v;
  const proc = Bun.spawn(
    [
      ...selfCommand(),
      "--bind", "127.0.0.1",
      "--http-port", String(ports.http),
      "--https-port", String(ports.https),
      "--admin-port", String(ports.admin),
      "--shutdown-delay", "0s",
      "--workers", "1",
      "--access-log", "off",
      "--manifests", dir,
      ...flags,
    ],
    {
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
      env,
      // The channel is the child's tie to this process: a Portico with one exits when it closes
      // (runtime/run.ts), which the kernel does when this process dies in any way, SIGKILL
      // included, where the cleanup below never runs. Nothing is sent on it.
      ipc: () => undefined,
    },
  );
  let tail = "";
  const drained = (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stderr) tail = (tail + dec.decode(chunk, { stream: true })).slice(-4000);
  })().catch(() => undefined);
  return { proc, ports, tail: () => tail, drained };
}

/** Attempts at starting a Portico of the proof: a port taken between freePorts and its bind fails one. */
const START_ATTEMPTS = 3;

/** Starts a Portico serving `dir` and waits until it is ready; `children` holds every process started, for the cleanup. */
async function startReady(dir: string, flags: readonly string[], children: Child[], deadline: number): Promise<Child> {
  for (let attempt = 1; ; attempt++) {
    const c = startChild(dir, flags);
    children.push(c);
    try {
      await waitReady(c, deadline);
      return c;
    } catch (err) {
      // Exit status 1 is a start-up failure, a port in use among them (src/main.ts).
      if (c.proc.exitCode !== 1 || attempt >= START_ATTEMPTS || Date.now() > deadline) throw err;
    }
  }
}

async function waitReady(c: Child, deadline: number): Promise<void> {
  for (;;) {
    if (c.proc.exitCode !== null) {
      await c.drained;
      throw new Error(`a Portico of the proof exited with ${c.proc.exitCode}: ${c.tail().trim().split("\n").slice(-5).join(" | ")}`);
    }
    const ok = await fetch(`http://127.0.0.1:${c.ports.admin}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status === 200, () => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`a Portico of the proof was not ready within ${START_TIMEOUT_MS} ms: ${c.tail().trim().split("\n").slice(-5).join(" | ")}`);
    await Bun.sleep(100);
  }
}

export interface ProveOptions {
  /** The set's manifests (a file or a directory). */
  readonly manifests: string;
  /** Converts the set in `dir` (the Ingresses as served by the proof): the YAML `migrate --to gateway-api` writes, and its notes. */
  readonly convert: (dir: string) => Promise<{ yaml: string; notes: readonly ConversionNote[] }>;
  /** Flags for the Portico serving the Ingresses (the class flags). */
  readonly ingressFlags: readonly string[];
  /** Flags for the Portico serving the Gateway API objects. */
  readonly gatewayFlags: readonly string[];
}

/**
 * Serves the set both ways, asks the sample, and returns every differing request. The set's
 * EndpointSlices are replaced by one per Service pointing at a raw backend, and each TLS Secret
 * an Ingress names by a certificate minted for its hosts (the set's own may be fake). Everything
 * it starts is stopped before it returns or throws, and on SIGINT/SIGTERM meanwhile.
 */
export async function proveConversion(o: ProveOptions): Promise<Proof> {
  const docs = await readManifests(o.manifests);
  const dir = mkdtempSync(join(tmpdir(), "portico-prove-"));
  const backends = new Map<string, Backend>();
  const children: Child[] = [];
  const cleanup = () => {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill("SIGKILL");
    for (const b of backends.values()) b.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (sig: NodeJS.Signals) => {
    cleanup();
    // 128 + the signal's number, as a shell reports it.
    process.exit(sig === "SIGINT" ? 130 : 143);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const ingressDocs: Obj[] = [];
    const shared: Obj[] = [];
    const tlsNames = new Map<string, Set<string>>();
    for (const d of docs) {
      if (d.kind !== "Ingress") continue;
      const ns = d.metadata?.namespace ?? "default";
      for (const t of ((d.spec ?? {}) as IngressSpec).tls ?? []) {
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
      else if (kind === "Secret" && !tlsNames.has(keyOf(d))) shared.push(d);
      // EndpointSlices are replaced below; Gateway API objects of the set and other kinds are left out.
    }
    for (const s of shared.filter((d) => d.kind === "Service").slice(0, MAX_SERVICES)) {
      const spec = (s.spec ?? {}) as { type?: string; ports?: { name?: string; port: number }[] };
      if (spec.type === "ExternalName") continue;
      const b = startBackend(keyOf(s));
      backends.set(b.name, b);
      shared.push({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: { name: `${s.metadata?.name}-proof`, namespace: s.metadata?.namespace ?? "default", labels: { "kubernetes.io/service-name": s.metadata?.name } } as Obj["metadata"],
        addressType: "IPv4",
        ports: (spec.ports ?? []).map((p) => ({ ...(p.name !== undefined ? { name: p.name } : {}), port: b.port })),
        endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
      });
    }
    const now = Date.now();
    for (const [k, hosts] of tlsNames) {
      const [namespace, name] = k.split("/") as [string, string];
      const sans = [...hosts].filter((h) => h !== "");
      const c = createSelfSignedCertificate({ subjectCN: sans[0] ?? "proof.test", sans: sans.length > 0 ? sans : ["proof.test"], notBefore: new Date(now - 3_600_000), notAfter: new Date(now + 86_400_000) });
      shared.push({ apiVersion: "v1", kind: "Secret", type: "kubernetes.io/tls", metadata: { name, namespace }, data: { "tls.crt": Buffer.from(c.certPem).toString("base64"), "tls.key": Buffer.from(c.keyPem).toString("base64") } });
    }
    const write = (d: string, objs: readonly Obj[]) => {
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, "objects.yaml"), objs.map((x) => `---\n${dump(x, { lineWidth: -1, noRefs: true })}`).join(""));
    };
    const ingDir = join(dir, "ingress");
    const gwDir = join(dir, "gateway");
    write(ingDir, [...shared, ...ingressDocs]);
    const conv = await o.convert(ingDir);
    write(gwDir, shared);
    writeFileSync(join(gwDir, "gateway.yaml"), conv.yaml);
    // The same flags on both sides, so that only the objects differ (the defaults
    // --ingress-nginx-compat serves, its 404 page...).
    const deadline = Date.now() + START_TIMEOUT_MS;
    const [ing, gw] = await Promise.all([
      startReady(ingDir, ["--ingress-nginx-compat", ...o.ingressFlags], children, deadline),
      startReady(gwDir, ["--ingress-nginx-compat", ...o.gatewayFlags], children, deadline),
    ]);

    const sample = sampleOf(ingressDocs);
    const ask = async (c: Child, r: ProofRequest): Promise<ProofAnswer> => {
      const before = new Map([...backends].map(([k, b]) => [k, b.heads.length]));
      const port = r.scheme === "https" ? c.ports.https : c.ports.http;
      const ports = (s: string) => s.replaceAll(`:${c.ports.https}`, ":TLSPORT").replaceAll(`:${c.ports.http}`, ":PORT").replaceAll(`=${c.ports.https}`, "=TLSPORT").replaceAll(`=${c.ports.http}`, "=PORT");
      let res: Response;
      try {
        res = await fetch(`${r.scheme}://127.0.0.1:${port}${r.path}`, {
          method: r.method,
          headers: { host: r.host, connection: "close", ...r.headers },
          redirect: "manual",
          signal: AbortSignal.timeout(30_000),
          // Loopback to our own child, with a certificate minted above: the name is what is asked.
          tls: { rejectUnauthorized: false, serverName: r.host },
        } as RequestInit);
        await res.arrayBuffer();
      } catch (e) {
        // A path or host the client cannot send (a set's deliberately bad input): the same for both.
        return { status: 0, location: null, fields: [`client: ${(e as Error).message}`], received: null };
      }
      const fields: string[] = [];
      res.headers.forEach((value, name) => {
        if (!NOISE.has(name.toLowerCase())) fields.push(ports(`${name.toLowerCase()}: ${value}`));
      });
      let received: ProofAnswer["received"] = null;
      for (const [k, b] of backends) {
        if (b.heads.length <= (before.get(k) ?? 0)) continue;
        const head = b.heads.at(-1)!.split("\r\n");
        const kept = head
          .slice(1)
          .map((l) => {
            const i = l.indexOf(":");
            return `${l.slice(0, i).toLowerCase()}:${l.slice(i + 1)}`;
          })
          .filter((l) => !NOISE_RECEIVED.has(l.slice(0, l.indexOf(":"))));
        // X-Forwarded-Port is each Portico's own listening port.
        received = { backend: k, line: head[0]!, fields: kept.map((l) => (l === `x-forwarded-port: ${port}` ? "x-forwarded-port: PORT" : ports(l))).sort() };
      }
      const loc = res.headers.get("location");
      return { status: res.status, location: loc === null ? null : ports(loc), fields: fields.sort(), received };
    };
    // Ready is not yet serving the set: both have read it once the first request answers the
    // same, other than 404, from each (or when the wait is over: then the sample says what differs).
    const first = sample[0];
    const served = Date.now() + START_TIMEOUT_MS / 2;
    while (first !== undefined && Date.now() < served) {
      const [a, b] = [await ask(ing, first), await ask(gw, first)];
      if (a.status === b.status && a.status !== 404) break;
      await Bun.sleep(100);
    }
    const hostsOf = new Map<string, Set<string>>();
    for (const d of ingressDocs) hostsOf.set(keyOf(d), new Set((((d.spec ?? {}) as IngressSpec).rules ?? []).map((r) => hostFor(r.host))));
    const differ: ProofDifference[] = [];
    for (const r of sample) {
      const a = await ask(ing, r);
      const b = await ask(gw, r);
      if (JSON.stringify(a) === JSON.stringify(b)) continue;
      const asking = r.why.split(" ")[0]!;
      const notes = conv.notes.filter((n) => n.ingress === asking || hostsOf.get(n.ingress)?.has(r.host) === true);
      differ.push({ request: r, ingress: a, gateway: b, notes });
    }
    return { asked: sample.length, same: sample.length - differ.length, differ };
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    cleanup();
    await Promise.all(children.map((c) => c.proc.exited));
  }
}

const answerText = (a: ProofAnswer): string =>
  [String(a.status), ...(a.location !== null ? [`→ ${a.location}`] : []), ...(a.received !== null ? [`${a.received.backend} got ${JSON.stringify(a.received.line)}`] : [])].join(" ");

/** The proof as comment lines, so that the YAML output stays one `kubectl apply` can take. */
export function proofText(p: Proof): string {
  const out = [`# portico-proof: asked ${p.asked}, same ${p.same}, differ ${p.differ.length}`];
  for (const d of p.differ) {
    const q = d.request;
    const hdrs = Object.entries(q.headers).map(([k, v]) => `${k}: ${v}`).join(", ");
    out.push(`#   ${q.method} ${q.scheme}://${q.host}${q.path}${hdrs === "" ? "" : ` (${hdrs})`}  [${q.why}]`);
    out.push(`#     Ingress: ${answerText(d.ingress)}`, `#     Gateway: ${answerText(d.gateway)}`);
    const onlyI = d.ingress.fields.filter((f) => !d.gateway.fields.includes(f));
    const onlyG = d.gateway.fields.filter((f) => !d.ingress.fields.includes(f));
    if (onlyI.length > 0) out.push(`#     fields only from the Ingress: ${onlyI.join("; ")}`);
    if (onlyG.length > 0) out.push(`#     fields only from the Gateway: ${onlyG.join("; ")}`);
    const ri = d.ingress.received;
    const rg = d.gateway.received;
    if (ri !== null && rg !== null) {
      const a = ri.fields.filter((f) => !rg.fields.includes(f));
      const b = rg.fields.filter((f) => !ri.fields.includes(f));
      if (a.length > 0) out.push(`#     the backend got, from the Ingress only: ${a.join("; ")}`);
      if (b.length > 0) out.push(`#     the backend got, from the Gateway only: ${b.join("; ")}`);
    }
    // The notes' text is in the `# portico-note:` lines at the head (and in --output json).
    out.push(d.notes.length === 0 ? "#     notes: none for this host" : `#     notes: ${[...new Set(d.notes.map((n) => `${n.ingress} ${n.annotation || "-"} (${n.carriedAs ?? "not read"})`))].join("; ")}`);
  }
  return `${out.map((l) => l.replaceAll("\n", " ")).join("\n")}\n`;
}
