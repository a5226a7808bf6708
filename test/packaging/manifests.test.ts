// The manifests in k8s/ deploy as they are: kustomize lists every file, the Deployment's
// flags parse with the real flag table, and names, ports and timings agree across objects.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { FLAGS, envName } from "../../src/config/flags.ts";
import { parseArgs } from "../../src/config/parse.ts";
import type { Config } from "../../src/config/types.ts";
import { type Binding, type Manifest, type Role, K8S_DIR, ROOT, find, loadDir, ofKind, resourceFiles } from "./k8s.ts";

interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string }; resourceFieldRef?: { containerName?: string; resource: string; divisor?: string } };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: unknown };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
}
interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  terminationGracePeriodSeconds?: number;
  securityContext?: Record<string, unknown>;
  topologySpreadConstraints?: { topologyKey: string; labelSelector?: { matchLabels?: Record<string, string> } }[];
  containers: Container[];
}
interface Deployment extends Manifest {
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
}
interface Service extends Manifest {
  spec: {
    type?: string;
    externalTrafficPolicy?: string;
    selector?: Record<string, string>;
    ports: { name?: string; port: number; targetPort?: string | number; nodePort?: number }[];
  };
}

const docs = loadDir(K8S_DIR);
const deploy = find<Deployment>(docs, "Deployment", "portico");
const pod = deploy.spec.template.spec;
const podLabels = deploy.spec.template.metadata.labels;
const container = pod.containers.find((c) => c.name === "portico")!;
const matches = (selector: Record<string, string> | undefined): boolean =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => podLabels[k] === v);

/** The environment as the kubelet would build it for this pod: downward API values filled in. */
function podEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    const ref = e.valueFrom;
    if (e.value !== undefined) env[e.name] = e.value;
    else if (ref?.fieldRef?.fieldPath === "metadata.namespace") env[e.name] = deploy.metadata.namespace ?? "";
    else if (ref?.fieldRef?.fieldPath === "metadata.name") env[e.name] = "portico-abc12-xyz34";
    else if (ref?.resourceFieldRef?.resource === "limits.cpu") env[e.name] = String(Math.ceil(cpu(container.resources?.limits?.cpu ?? "")));
    else throw new Error(`env ${e.name}: a source this test does not model`);
  }
  return env;
}
function cpu(q: string): number {
  return q.endsWith("m") ? Number(q.slice(0, -1)) / 1000 : Number(q);
}
function parsedConfig(): Config {
  const r = parseArgs(container.args ?? [], podEnv());
  if (r.type !== "run") throw new Error(`Deployment args do not parse: ${JSON.stringify(r)}`);
  return r.config;
}
function portNumber(p: string | number | undefined): number | undefined {
  return typeof p === "number" ? p : container.ports?.find((x) => x.name === p)?.containerPort;
}

describe("kustomization", () => {
  test("lists every k8s/*.yaml resource file, and nothing else", () => {
    const k = load(readFileSync(join(K8S_DIR, "kustomization.yaml"), "utf8")) as { resources: string[] };
    expect([...k.resources].sort()).toEqual(resourceFiles(K8S_DIR));
  });

  test("kubectl kustomize builds it with every object (skipped without kubectl)", () => {
    const kubectl = Bun.which("kubectl");
    if (!kubectl) return;
    const r = Bun.spawnSync([kubectl, "kustomize", K8S_DIR], { stdout: "pipe", stderr: "pipe", timeout: 20_000 });
    expect(r.stderr.toString()).toBe("");
    expect(r.exitCode).toBe(0);
    const kinds = r.stdout.toString().match(/^kind: .+$/gm) ?? [];
    expect(kinds.length).toBe(docs.length);
  });

  test("every namespaced object lives in the portico Namespace the manifests create", () => {
    find(docs, "Namespace", "portico");
    const clusterScoped = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding", "IngressClass", "CustomResourceDefinition"]);
    for (const { doc, file } of docs) {
      if (clusterScoped.has(doc.kind)) expect(doc.metadata.namespace, `${file} ${doc.kind}`).toBeUndefined();
      else expect(doc.metadata.namespace, `${file} ${doc.kind}/${doc.metadata.name}`).toBe("portico");
    }
  });
});

describe("Deployment flags and environment", () => {
  test("the args and environment parse with the real flag table", () => {
    expect(parseArgs(container.args ?? [], podEnv()).type).toBe("run");
    // Negative control: the same parse rejects a flag that does not exist.
    expect(parseArgs([...(container.args ?? []), "--no-such-flag=1"], podEnv()).type).toBe("error");
  });

  test("every PORTICO_* variable is a flag's twin; the rest are the downward-API pod identity", () => {
    const twins = new Set(Object.values(FLAGS).map((f) => envName(f.name)));
    const others: string[] = [];
    for (const e of container.env ?? []) {
      if (e.name.startsWith("PORTICO_")) expect(twins.has(e.name), e.name).toBe(true);
      else others.push(e.name);
    }
    expect(others.sort()).toEqual(["POD_NAME", "POD_NAMESPACE"]);
    expect(pod.enableServiceLinks).toBe(false);
  });

  test("pod namespace and name come from the downward API; workers from the CPU limit", () => {
    const byName = new Map((container.env ?? []).map((e) => [e.name, e]));
    expect(byName.get("POD_NAMESPACE")?.valueFrom?.fieldRef?.fieldPath).toBe("metadata.namespace");
    expect(byName.get("POD_NAME")?.valueFrom?.fieldRef?.fieldPath).toBe("metadata.name");
    const workers = byName.get("PORTICO_WORKERS")?.valueFrom?.resourceFieldRef;
    expect(workers).toEqual({ containerName: "portico", resource: "limits.cpu", divisor: "1" });
    expect(parsedConfig().workers).toBe(2);
  });

  test("names agree: IngressClass, controller, publish-service, election id, Lease namespace", () => {
    const c = parsedConfig();
    const cls = find<Manifest & { spec: { controller: string } }>(docs, "IngressClass", c.ingressClass);
    expect(cls.spec.controller).toBe(c.controllerName);
    expect(c.publishService).toEqual({ namespace: "portico", name: "portico" });
    expect(find<Service>(docs, "Service", c.publishService!.name).spec.type).toBe("LoadBalancer");
    const leaseRole = ofKind<Role>(docs, "Role").find((r) => r.rules?.some((x) => x.resources?.includes("leases")));
    expect(leaseRole?.metadata.namespace).toBe(deploy.metadata.namespace);
    const named = leaseRole?.rules?.find((x) => x.resourceNames);
    expect(named?.resourceNames).toEqual([c.electionId]);
    // The Lease goes in POD_NAMESPACE (no --election-namespace), which is the Role's namespace.
    expect(c.electionNamespace).toBeNull();
  });

  test("the kubelet's SIGKILL comes after shutdown delay + grace period", () => {
    const c = parsedConfig();
    expect(c.shutdownDelayMs).toBe(5_000);
    expect(c.shutdownGracePeriodMs).toBe(30_000);
    expect(pod.terminationGracePeriodSeconds! * 1000).toBeGreaterThan(c.shutdownDelayMs + c.shutdownGracePeriodMs);
    expect(container.lifecycle?.preStop).toBeUndefined();
  });

  test("container ports are the configured listener ports", () => {
    const c = parsedConfig();
    expect(portNumber("http")).toBe(c.httpPort);
    expect(portNumber("https")).toBe(c.httpsPort);
    expect(portNumber("admin")).toBe(c.adminPort);
  });

  test("probes: liveness /healthz and readiness /readyz on the admin port", () => {
    const c = parsedConfig();
    expect(container.livenessProbe?.httpGet?.path).toBe("/healthz");
    expect(container.readinessProbe?.httpGet?.path).toBe("/readyz");
    expect(portNumber(container.livenessProbe?.httpGet?.port)).toBe(c.adminPort);
    expect(portNumber(container.readinessProbe?.httpGet?.port)).toBe(c.adminPort);
  });
});

describe("Deployment hardening and availability", () => {
  test("securityContext: non-root 65532, read-only root, no escalation, no capabilities, RuntimeDefault seccomp", () => {
    const sc = container.securityContext ?? {};
    expect(sc.runAsNonRoot).toBe(true);
    expect(sc.runAsUser).toBe(65532);
    expect(sc.readOnlyRootFilesystem).toBe(true);
    expect(sc.allowPrivilegeEscalation).toBe(false);
    expect(sc.capabilities).toEqual({ drop: ["ALL"] });
    expect(sc.seccompProfile).toEqual({ type: "RuntimeDefault" });
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.securityContext?.seccompProfile).toEqual({ type: "RuntimeDefault" });
  });

  test("service account token mounted, 2 replicas, requests and limits, spread over nodes and zones", () => {
    expect(pod.serviceAccountName).toBe("portico");
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(deploy.spec.replicas).toBe(2);
    for (const r of ["cpu", "memory"]) {
      expect(container.resources?.requests?.[r], `requests.${r}`).toBeString();
      expect(container.resources?.limits?.[r], `limits.${r}`).toBeString();
    }
    const spread = pod.topologySpreadConstraints ?? [];
    expect(spread.map((t) => t.topologyKey).sort()).toEqual(["kubernetes.io/hostname", "topology.kubernetes.io/zone"]);
    for (const t of spread) expect(matches(t.labelSelector?.matchLabels)).toBe(true);
    expect(matches(deploy.spec.selector.matchLabels)).toBe(true);
  });

  test("image is pinned to a version tag, not latest", () => {
    expect(container.image).toMatch(/^[\w.-]+(\/[\w.-]+)+:\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?$/);
  });

  test("PodDisruptionBudget keeps one replica, selecting the controller pods", () => {
    const pdb = find<Manifest & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } }>(docs, "PodDisruptionBudget", "portico");
    expect(pdb.spec.minAvailable).toBe(1);
    expect(matches(pdb.spec.selector.matchLabels)).toBe(true);
  });
});

describe("Services", () => {
  const services = ofKind<Service>(docs, "Service");

  test("LoadBalancer: 80→8080 (http), 443→8443 (https), externalTrafficPolicy Local", () => {
    const lb = find<Service>(docs, "Service", "portico");
    expect(lb.spec.type).toBe("LoadBalancer");
    expect(lb.spec.externalTrafficPolicy).toBe("Local");
    expect(matches(lb.spec.selector)).toBe(true);
    const ports = lb.spec.ports.map((p) => ({ name: p.name, port: p.port, target: portNumber(p.targetPort) }));
    expect(ports).toEqual([
      { name: "http", port: 80, target: 8080 },
      { name: "https", port: 443, target: 8443 },
    ]);
  });

  test("the admin port is reachable only inside the cluster", () => {
    const c = parsedConfig();
    for (const s of services) {
      const exposesAdmin = s.spec.ports.some((p) => portNumber(p.targetPort ?? p.port) === c.adminPort);
      if (exposesAdmin) expect(s.spec.type ?? "ClusterIP", s.metadata.name).toBe("ClusterIP");
    }
    expect(services.some((s) => s.spec.ports.some((p) => portNumber(p.targetPort) === c.adminPort))).toBe(true);
  });

  test("bindings name the ServiceAccount the Deployment uses", () => {
    for (const b of [...ofKind<Binding>(docs, "ClusterRoleBinding"), ...ofKind<Binding>(docs, "RoleBinding")])
      expect(b.subjects).toEqual([{ kind: "ServiceAccount", name: pod.serviceAccountName!, namespace: deploy.metadata.namespace! }]);
  });
});

describe("IngressClass", () => {
  test("not the default class, with the annotation left commented for the operator to choose", () => {
    const cls = find(docs, "IngressClass", "portico");
    expect(cls.metadata.annotations?.["ingressclass.kubernetes.io/is-default-class"]).toBeUndefined();
    const text = readFileSync(join(ROOT, "k8s/ingressclass.yaml"), "utf8");
    expect(text).toMatch(/^\s*#\s+ingressclass\.kubernetes\.io\/is-default-class: "true"$/m);
  });
});
